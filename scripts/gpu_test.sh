#!/usr/bin/env bash
# Kiln's GPU test suite (tests/gpu, README.md there), for a machine with an NVIDIA GPU.
# Runs from the repository root with the CUDA runtime in the build directory
# (KILN_BUILD_DIR, default build-cuda; build with KILN_GPU_DEVICE=cpu).
# Arguments go to pytest:
#   bash scripts/gpu_test.sh                     everything
#   bash scripts/gpu_test.sh -k layouts          one concern (or any pytest selection)
#   bash scripts/gpu_test.sh tests/gpu/test_models.py -k "mlp and fp32"
# A missing GPU, build file or runner fails the tests here (KILN_GPU_REQUIRED=1) rather than
# skipping them. Tables are printed at the end; with OUT set, they and their JSON and logs
# are written under $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
device=${KILN_GPU_DEVICE:-cuda}
default_build=build-cuda
[[ $device == cpu ]] && default_build=build
build=${KILN_BUILD_DIR:-$default_build}
if [[ ! -d $build ]]; then
  echo "gpu_test: no build directory $build (set KILN_BUILD_DIR)" >&2
  exit 2
fi
build=$(cd "$build" && pwd)
# A copy of the build directory may have lost the library's version link that the test
# binaries and runners are linked against.
if [[ ! -e $build/libkiln.so.0 ]]; then
  versioned=$(cd "$build" && ls libkiln.so.0.* 2>/dev/null | head -n 1 || true)
  [[ -n $versioned ]] && ln -sf "$versioned" "$build/libkiln.so.0"
fi
source scripts/gpu_env.sh "$build"
export KILN_BUILD_DIR=$build KILN_CLI=$build/kiln KILN_GPU_DEVICE=$device KILN_GPU_REQUIRED=1

# The whole suite unless the arguments name test files or directories of their own.
for a in "$@"; do
  if [[ $a == tests/gpu* ]]; then
    exec python3 -m pytest -p no:cacheprovider -rs "$@"
  fi
done
exec python3 -m pytest -p no:cacheprovider -rs tests/gpu "$@"
