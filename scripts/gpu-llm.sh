#!/usr/bin/env bash
# examples/llm on a GPU machine: exports the random-weight Llama-style model's
# prefill + decode for CUDA (configs tiny and 100m, fp32 and bf16), runs the
# C++ runner kiln-llm, checks it against eager PyTorch on the GPU and prints
# tokens/s (scripts/gpu_llm.py has the details and pass criteria). Logs and
# gpu_llm.json go to $OUT.
#
#   KILN_BUILD_DIR=build-cuda OUT=/tmp/out bash scripts/gpu-llm.sh [gpu_llm.py args]
#
# Runs from the repository root with a CUDA build (-DKILN_WITH_CUDA=ON, examples
# on: the default) carried along in KILN_BUILD_DIR (default build-cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${KILN_BUILD_DIR:-build-cuda}
for f in libkiln.so libkiln_cuda.so kiln-llm; do
  if [[ ! -e "$BUILD/$f" ]]; then
    echo "gpu-llm: $BUILD/$f is missing (configure with -DKILN_WITH_CUDA=ON, build the kiln_llm target)" >&2
    exit 2
  fi
done
BUILD=$(cd "$BUILD" && pwd)
source scripts/gpu-env.sh "$BUILD"
export KILN_LLM="$BUILD/kiln-llm"
export OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
python3 scripts/gpu_llm.py "$@" 2>&1 | tee "$OUT/gpu_llm.log"
exit "${PIPESTATUS[0]}"
