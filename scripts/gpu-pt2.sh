#!/usr/bin/env bash
# Stock PyTorch .pt2 packages on a GPU machine (H100, torch 2.11+cu130), from the
# repository root: compiles small CUDA models with torch._inductor.aoti_compile_and_package
# (link_libtorch=False with weights in a blob / kernels embedded, weights in the library / kernels
# as files, a float16 model with cuBLAS matmul fallbacks; torch's libtorch-linked default), runs
# them through `kiln import` + kiln.runtime.Module, `kiln run` on the .pt2 and Module on the .pt2,
# compares with eager on the GPU, checks the refusals (libtorch-linked package, a compute
# capability this GPU is not), prints a table and writes logs + JSON under $OUT (default
# /tmp/gpu-pt2-out). About 1-2 min. Exit status 1 if any row fails.
#
# Needs a CUDA build in $KILN_BUILD_DIR (default build-cuda/) with libkiln.so, libkiln_cuda.so and
# the kiln CLI (configure with -DKILN_WITH_CUDA=ON).
#
#   scripts/gpu-pt2.sh                 the GPU run
#   scripts/gpu-pt2.sh --device cpu    dry run of the same steps with CPU packages and a CPU build
#                                      (KILN_BUILD_DIR defaults to build/ then)
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=cuda
if [[ ${1:-} == --device ]]; then DEVICE=${2:?--device needs cuda or cpu}; shift 2; fi
if [[ $DEVICE == cpu ]]; then
  BUILD=${KILN_BUILD_DIR:-build}
  needed=(libkiln.so kiln)
else
  BUILD=${KILN_BUILD_DIR:-build-cuda}
  needed=(libkiln.so libkiln_cuda.so kiln)
fi
for f in "${needed[@]}"; do
  if [[ ! -e "$BUILD/$f" ]]; then
    echo "gpu-pt2: $BUILD/$f is missing (build Kiln there$([[ $DEVICE == cuda ]] && echo ' with -DKILN_WITH_CUDA=ON'))" >&2
    exit 2
  fi
done
BUILD=$(cd "$BUILD" && pwd)
source scripts/gpu-env.sh "$BUILD"
OUT=${OUT:-/tmp/gpu-pt2-out}
mkdir -p "$OUT"

set -o pipefail
timeout 540 python3 scripts/gpu_pt2.py --device "$DEVICE" --cli "$BUILD/kiln" --out "$OUT" "$@" 2>&1 \
  | tee "$OUT/gpu-pt2.log"
