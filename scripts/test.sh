#!/usr/bin/env bash
# Sets up, builds, and runs every test: C++ unit tests (ctest) and the Python
# suite, which exports models with the real AOTInductor and compares Kiln's
# outputs with eager PyTorch. Fails if either runner ran no test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build_dir="${KILN_BUILD_DIR:-build}"

echo "[kiln test] ctest"
ctest_log=$(mktemp)
# GPU tests (label gpu) run on the GPU machine through scripts/gpu-suite.
(cd "$build_dir" && ctest --output-on-failure -LE gpu -j "$(nproc)") 2>&1 | tee "$ctest_log"
if grep -q "No tests were found" "$ctest_log"; then
  echo "[kiln test] ctest ran no test" >&2
  exit 1
fi

echo "[kiln test] pytest"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export KILN_LIBRARY="$PWD/$build_dir/libkiln.so"
export KILN_CLI="$PWD/$build_dir/kiln"
# Parity programs are exported once and reused by the sanitizer step below.
KILN_PARITY_PROGRAM_DIR=$(mktemp -d)
export KILN_PARITY_PROGRAM_DIR
trap 'rm -rf "$KILN_PARITY_PROGRAM_DIR"' EXIT
set +e
python3 -m pytest -q tests/python "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "[kiln test] pytest ran no test" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then exit "$status"; fi

# Unit tests and the CPU parity suite under ASan+UBSan, then every libFuzzer
# target for KILN_FUZZ_SECONDS each (docs/testing.md).
echo "[kiln test] sanitizers"
bash scripts/sanitize.sh
echo "[kiln test] fuzzing"
bash scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-60}"
