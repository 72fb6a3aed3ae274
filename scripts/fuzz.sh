#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for a bounded
# time from the generated seed corpus. Fails if any target finds a crash, a
# leak, a sanitizer report or a timeout; the input that triggered it is kept.
#
#   scripts/fuzz.sh [seconds per target]      default 60 (the CI run)
#   KILN_FUZZ_JOBS=N scripts/fuzz.sh 3600      longer run, N parallel workers per target
#   KILN_FUZZ_TARGETS="program_reader"         only some targets (default: all)
#   KILN_FUZZ_BUILD_DIR                        build directory (default: build-fuzz)
#
# New coverage-increasing inputs accumulate in <build>/fuzz/work/<target>, so
# repeated runs continue where the last one stopped; crash inputs are written
# to <build>/fuzz/artifacts/<target>-crash-<sha1>. Reproduce one with
#   <build>/fuzz/<target>_fuzzer <artifact>
# and turn it into a regression test (see docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
jobs="${KILN_FUZZ_JOBS:-1}"
build_dir="${KILN_FUZZ_BUILD_DIR:-build-fuzz}"
targets=(${KILN_FUZZ_TARGETS:-program_reader input_validation})

if ! command -v clang++ >/dev/null; then
  echo "[kiln fuzz] clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
if [ ! -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
  echo "[kiln fuzz] clang's libFuzzer runtime is missing (Debian: libclang-rt-14-dev)" >&2
  exit 1
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
echo "[kiln fuzz] building in $build_dir"
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON \
  -DKILN_WITH_CUDA=OFF -DKILN_BUILD_TESTS=OFF -DKILN_WARNINGS_AS_ERRORS=ON "${launcher[@]}" >/dev/null
build_targets=(fuzz_corpus)
for t in "${targets[@]}"; do build_targets+=("${t}_fuzzer"); done
cmake --build "$build_dir" -j "$(nproc)" --target "${build_targets[@]}"

fuzz_dir="$build_dir/fuzz"
mkdir -p "$fuzz_dir/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
failed=()
summary=()
for t in "${targets[@]}"; do
  work="$fuzz_dir/work/$t"
  log="$fuzz_dir/$t.log"
  mkdir -p "$work"
  parallel=()
  ((jobs > 1)) && parallel=(-fork="$jobs" -ignore_crashes=0)
  echo "[kiln fuzz] $t: ${seconds}s, $jobs worker(s), log $log"
  set +e
  "$fuzz_dir/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$fuzz_dir/artifacts/$t-" "${parallel[@]}" "$work" "$fuzz_dir/corpus/$t" >"$log" 2>&1
  status=$?
  set -e
  # One worker prints final stats; -fork prints "#<total execs>: ..." lines.
  execs=$(awk '/^stat::number_of_executed_units:/ {n=$2} /^#[0-9]+:/ {sub(/^#/, "", $1); sub(/:$/, "", $1); n=$1}
               END {print n+0}' "$log")
  rate=$(awk '/^stat::average_exec_per_sec:/ {r=$2} END {print r+0}' "$log")
  ((rate > 0)) || rate=$((execs / (seconds > 0 ? seconds : 1)))
  line="$t: ${execs:-0} execs, ${rate:-0} exec/s, corpus $(ls "$work" | wc -l) inputs, exit $status"
  summary+=("$line")
  if [ "$status" -ne 0 ]; then
    failed+=("$t")
    echo "[kiln fuzz] $t FAILED; last lines of $log:" >&2
    tail -n 40 "$log" >&2
  fi
done
for line in "${summary[@]}"; do echo "[kiln fuzz] $line"; done
if ((${#failed[@]})); then
  echo "[kiln fuzz] crashes in: ${failed[*]} (inputs in $fuzz_dir/artifacts)" >&2
  exit 1
fi
