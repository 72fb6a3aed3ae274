#!/usr/bin/env bash
# Kiln's GPU benchmark, for a GPU machine: sets the library paths for the CUDA
# runtime in the build directory (default build-cuda/, override with
# KILN_BUILD_DIR), then runs bench/models/gpu_bench.py with the arguments
# given (see --help). Results: $OUT/gpu_bench.json and $OUT/gpu_bench.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${KILN_BUILD_DIR:-build-cuda}
if [[ ! -e "$BUILD/libkiln.so" || ! -e "$BUILD/libkiln_cuda.so" || ! -e "$BUILD/kiln" ]]; then
  echo "gpu_bench: $BUILD/libkiln.so, libkiln_cuda.so and kiln are needed (configure with -DKILN_WITH_CUDA=ON)" >&2
  exit 2
fi
BUILD=$(cd "$BUILD" && pwd)
source scripts/gpu_env.sh "$BUILD"
export KILN_BUILD_DIR=$BUILD
# PyTorch's AOTI loader segfaults on the GPU image unless the system libstdc++
# is loaded first: the package library's std::regex code (parse_device_str)
# otherwise binds to the template instances that libtorch_python.so exports,
# and crashes in regex_traits<char>::transform_primary during
# aoti_load_package (bench/diagnostics/aoti_loader_probe.py; docs/benchmarks.md). The
# preload applies to every engine alike. KILN_BENCH_NO_PRELOAD=1 turns it off.
if [[ -z ${KILN_BENCH_NO_PRELOAD:-} ]]; then
  libstdcxx=$(ldconfig -p 2>/dev/null | grep -o '/[^ ]*/libstdc++\.so\.6$' | head -1 || true)
  if [[ -n $libstdcxx ]]; then
    export LD_PRELOAD="$libstdcxx${LD_PRELOAD:+:$LD_PRELOAD}"
    echo "gpu_bench: LD_PRELOAD=$libstdcxx (PyTorch's AOTI loader needs it here; see docs/benchmarks.md)" >&2
  fi
fi
exec python3 bench/models/gpu_bench.py "$@"
