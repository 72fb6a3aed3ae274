#!/usr/bin/env bash
# examples/llm on a GPU machine: exports the random-weight Llama-style model's
# prefill + decode for CUDA (configs tiny and 100m, fp32 and bf16), runs the
# C++ runner kiln-llm, checks it against eager PyTorch on the GPU and prints
# tokens/s (scripts/gpu_llm.py has the details and pass criteria). Logs and
# gpu_llm.json go to $OUT.
#
#   KILN_BUILD_DIR=build-cuda OUT=/tmp/out bash scripts/gpu-llm.sh [--with-pytest] [gpu_llm.py args]
#
# --with-pytest also runs tests/python/test_llm_example.py with the program
# exported for CUDA (one more export, about a minute). Runs from the repository
# root with a CUDA build (-DKILN_WITH_CUDA=ON, examples on: the default)
# in KILN_BUILD_DIR (default build-cuda).
set -uo pipefail
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

with_pytest=0
args=()
for a in "$@"; do
  case "$a" in
    --with-pytest) with_pytest=1 ;;
    *) args+=("$a") ;;
  esac
done

python3 scripts/gpu_llm.py ${args[@]+"${args[@]}"} 2>&1 | tee "$OUT/gpu_llm.log"
status=${PIPESTATUS[0]}
if (( with_pytest )); then
  echo "== tests/python/test_llm_example.py on cuda"
  KILN_LLM_DEVICE=cuda KILN_CLI="$BUILD/kiln" python3 -m pytest -q -p no:cacheprovider \
    tests/python/test_llm_example.py 2>&1 | tee "$OUT/pytest_llm.log"
  (( PIPESTATUS[0] == 0 )) || status=1
fi
exit "$status"
