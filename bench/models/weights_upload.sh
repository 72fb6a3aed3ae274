#!/usr/bin/env bash
# Weight loading on one GPU against pinned host->device bandwidth:
# exports a ~1.4 GB bf16 model of 200 constants, loads it with Kiln 6 times
# from the page cache, reads Kiln's "placed N weights ..." info line for each
# load, measures pinned H2D with torch and checks outputs against eager. About
# 2-4 minutes. Results: $OUT/weights_upload.{md,json,log} (default OUT
# /tmp/kiln-weights-check); the exported model goes to /tmp, not $OUT.
#   KILN_BUILD_DIR=build-cuda bash bench/models/weights_upload.sh [--loads N] [--blocks N]
# The build dir must hold libkiln.so and libkiln_cuda.so (configure with
# -DKILN_WITH_CUDA=ON).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${KILN_BUILD_DIR:-build-cuda}
if [[ ! -e "$BUILD/libkiln.so" || ! -e "$BUILD/libkiln_cuda.so" ]]; then
  echo "weights_upload: $BUILD/libkiln.so and libkiln_cuda.so are needed (configure with -DKILN_WITH_CUDA=ON)" >&2
  exit 2
fi
BUILD=$(cd "$BUILD" && pwd)
source scripts/gpu_env.sh "$BUILD"
export KILN_LOG_LEVEL=${KILN_LOG_LEVEL:-info}
OUT=${OUT:-/tmp/kiln-weights-check}
mkdir -p "$OUT"
python3 bench/models/weights_upload.py --out "$OUT" "$@" 2>&1 | tee "$OUT/weights_upload.log"
exit "${PIPESTATUS[0]}"
