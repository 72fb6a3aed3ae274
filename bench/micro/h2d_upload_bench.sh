#!/usr/bin/env bash
# Builds and runs bench/micro/h2d_upload_bench.cpp (CUDA toolkit needed): how fast each
# host-to-device upload strategy moves a page-cached weights file onto the GPU.
#   bench/micro/h2d_upload_bench.sh [GiB]
set -euo pipefail
cd "$(dirname "$0")/../.."
cuda="${CUDA_HOME:-/usr/local/cuda}"
bin="${KILN_H2D_BENCH_BIN:-/tmp/kiln_h2d_upload_bench}"
if [ ! -x "$bin" ]; then
  g++ -O2 -std=c++20 -I"$cuda/include" bench/micro/h2d_upload_bench.cpp -o "$bin" \
    -L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread
fi
exec "$bin" "$@"
