#!/usr/bin/env bash
# Sets up, builds, and runs every test: C++ unit tests (ctest) and the Python
# suite, which exports models with the real AOTInductor and compares Kiln's
# outputs with eager PyTorch. Fails if either runner ran no test, or if any step
# leaves a file behind in TMPDIR or in the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/python_env.sh  # python3 is the environment setup.sh made
build_dir="${KILN_BUILD_DIR:-build}"

# Every step runs with TMPDIR pointing at a fresh empty directory that must be
# empty again when the step ends (tests remove their files, failing ones too).
# The scratch directory around it holds this script's own files.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kiln-test-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# PyTorch keeps its Inductor cache under the system temp directory, and its
# precompiled headers there whatever TORCHINDUCTOR_CACHE_DIR says. A link in
# the fresh TMPDIR keeps both where they were, reused from run to run; it is
# the one entry the check below allows.
torch_user=$(python3 -c 'import getpass, re; print(re.sub(r"[\\/:*?\"<>|]", "_", getpass.getuser()))')
inductor_cache="${TMPDIR:-/tmp}/torchinductor_$torch_user"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$inductor_cache}"
mkdir -p "$inductor_cache"
export TMPDIR="$scratch/tmp"
mkdir "$TMPDIR"
inductor_link="$TMPDIR/torchinductor_$torch_user"
ln -s "$inductor_cache" "$inductor_link"

# What the source tree holds besides tracked files, build directories, the
# Python environment and Python's caches; compared before and after the steps
# (in a git checkout).
untracked() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --others --exclude='/build*/' --exclude='/.venv/' --exclude='__pycache__/' \
      --exclude='/.pytest_cache/' | sort
  fi
}
untracked_before="$scratch/untracked-before"
untracked >"$untracked_before"

# Fails, naming them, if step $1 left anything in TMPDIR or the source tree.
check_nothing_left() {
  local left
  left=$(find "$TMPDIR" -mindepth 1 ! -path "$inductor_link" -printf '  %P\n' | sort)
  if [ -n "$left" ]; then
    printf '[kiln test] %s left files in TMPDIR (%s):\n%s\n' "$1" "$TMPDIR" "$(head -n 50 <<<"$left")" >&2
    exit 1
  fi
  left=$(untracked | comm -13 "$untracked_before" - | sed 's/^/  /')
  if [ -n "$left" ]; then
    printf '[kiln test] %s left files in the source tree:\n%s\n' "$1" "$(head -n 50 <<<"$left")" >&2
    exit 1
  fi
}

echo "[kiln test] ctest"
ctest_log="$scratch/ctest.log"
# GPU tests (label gpu) run on the GPU machine through scripts/gpu_test.sh.
(cd "$build_dir" && ctest --output-on-failure -LE gpu -j "$(nproc)") 2>&1 | tee "$ctest_log"
if grep -q "No tests were found" "$ctest_log"; then
  echo "[kiln test] ctest ran no test" >&2
  exit 1
fi
check_nothing_left ctest

echo "[kiln test] pytest"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export KILN_LIBRARY="$PWD/$build_dir/libkiln.so"
export KILN_CLI="$PWD/$build_dir/kiln"
# Parity programs are exported once and reused by the sanitizer step below.
export KILN_PARITY_PROGRAM_DIR="$scratch/parity-programs"
mkdir "$KILN_PARITY_PROGRAM_DIR"
set +e
python3 -m pytest -q tests/python tests/ops tests/zoo tests/serving "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "[kiln test] pytest ran no test" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then exit "$status"; fi
check_nothing_left pytest

# The Python wheel: built, installed into a fresh environment, used from outside
# the source tree with the system SLEEF hidden (scripts/wheel_test.sh).
echo "[kiln test] wheel"
bash scripts/wheel_test.sh  # unsets KILN_LIBRARY and the like itself
check_nothing_left "the wheel step"

# Unit tests and the CPU parity suite under ASan+UBSan, then every libFuzzer
# target for KILN_FUZZ_SECONDS each (docs/testing.md).
echo "[kiln test] sanitizers"
bash scripts/sanitize.sh
check_nothing_left "the sanitizer step"
echo "[kiln test] fuzzing"
bash scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-60}"
check_nothing_left "the fuzzing step"
