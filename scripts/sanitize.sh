#!/usr/bin/env bash
# Builds Kiln with AddressSanitizer + UndefinedBehaviorSanitizer (leak checking
# on) and runs the C++ unit tests and the CPU parity suite against that build.
# Any sanitizer report fails the step.
#
# Python is not built with ASan, so the parity models are exported with the
# normal Python package and run through the sanitized `kiln run` CLI (the ASan
# runtime lives in that executable; the AOTInductor model libraries it loads
# are not instrumented, Kiln's side of every call is). The Python-wrapper half
# of the parity suite runs uninstrumented in scripts/test.sh.
#
#   KILN_ASAN_BUILD_DIR   build directory (default: build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh  # the exporter and pytest run in the environment setup.sh made
build_dir="${KILN_ASAN_BUILD_DIR:-build-asan}"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
echo "[kiln sanitize] building in $build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON -DKILN_WITH_CUDA=OFF \
  -DKILN_WARNINGS_AS_ERRORS=ON "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"

# A distinct exit code: a sanitizer report in a test that expects a failing
# exit status (1) must not pass for that failure.
# allocator_may_return_null: tests check that a genuine allocation failure (an
# impossible size) comes back as OutOfMemory; ASan would otherwise abort.
export ASAN_OPTIONS="detect_leaks=1:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=86"
export LSAN_OPTIONS="exitcode=86"

echo "[kiln sanitize] ctest (ASan+UBSan)"
# Tests that measure resident memory run on their own with ASan's quarantine
# (freed blocks kept resident, poisoned, to catch use-after-free) and fake
# stacks (stack-use-after-return) off: both read as growth. Leak and bounds
# checks stay on.
rss_tests='LoadUnloadCyclesLeaveNothingBehind'
ctest_log=$(mktemp)
trap 'rm -f "$ctest_log"' EXIT
(cd "$build_dir" && ctest --output-on-failure -LE gpu -E "$rss_tests" -j "$(nproc)") 2>&1 | tee "$ctest_log"
(cd "$build_dir" && ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0:thread_local_quarantine_size_kb=0:detect_stack_use_after_return=0" \
  ctest --output-on-failure -LE gpu -R "$rss_tests") 2>&1 | tee -a "$ctest_log"
if grep -q "No tests were found" "$ctest_log"; then
  echo "[kiln sanitize] ctest ran no test" >&2
  exit 1
fi

echo "[kiln sanitize] CPU parity suite and CLI tests through $build_dir/kiln (ASan+UBSan)"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export KILN_CLI="$PWD/$build_dir/kiln"
# The exporter and the eager reference run in this uninstrumented Python.
unset KILN_LIBRARY
set +e
python3 -m pytest -q tests/python/test_parity.py::test_cli_matches_eager tests/python/test_cli.py
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "[kiln sanitize] pytest ran no test" >&2
  exit 1
fi
exit "$status"
