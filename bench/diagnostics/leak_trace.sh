#!/usr/bin/env bash
# Which code keeps host memory across load/unload cycles of a Kiln program?
# Builds bench/diagnostics/leak_trace.cpp against the runtime in $KILN_BUILD_DIR (default
# build) and the allocation tracer bench/diagnostics/alloc_stacks.cpp, runs warm-up cycles
# and then N traced cycles with the tracer preloaded, and prints the call stacks
# whose allocations stay live once per cycle or more (bench/diagnostics/leak_trace_report.py).
#   bench/diagnostics/leak_trace.sh PROGRAM.kiln [cycles=50] [load-only]
# Logs go to $OUT when set.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/python_env.sh  # python3 below: the environment setup.sh made, where there is one
build=$(cd "${KILN_BUILD_DIR:-build}" && pwd)
program=$1
cycles=${2:-50}
mode=${3:-}
work=${OUT:-$(mktemp -d)}
g++ -O1 -g -std=c++20 -Iinclude bench/diagnostics/leak_trace.cpp -o "$work/leak_trace" -L"$build" -lkiln -Wl,-rpath,"$build" -ldl
g++ -O1 -g -std=c++20 -shared -fPIC bench/diagnostics/alloc_stacks.cpp -o "$work/libkiln_alloc_stacks.so"
KILN_LEAK_STACKS=$work/stacks.txt KILN_LEAK_MAPS=$work/maps.txt \
  LD_PRELOAD="$work/libkiln_alloc_stacks.so${LD_PRELOAD:+:$LD_PRELOAD}" "$work/leak_trace" "$program" "$cycles" $mode
python3 bench/diagnostics/leak_trace_report.py "$work/stacks.txt" "$work/maps.txt" "$cycles"
