// What the CUDA micro-benchmarks share: failing loudly on a CUDA or shim
// error, and timing a call from HBM (L2 flushed before each run, the median
// of kTimed runs after kWarmup, between CUDA events on the legacy stream).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kiln/error.h"

#define CHECK_CUDA(expr)                                                                          \
  do {                                                                                            \
    const cudaError_t e_ = (expr);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #expr, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

#define CHECK_SHIM(expr)                                                                                   \
  do {                                                                                                     \
    if ((expr) != 0) {                                                                                     \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #expr, kiln::last_error_message().c_str(), __LINE__); \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

namespace kiln::bench {

constexpr int kWarmup = 5, kTimed = 50;

/// Memset target that evicts everything from L2 before each timed call.
struct L2Flusher {
  void* buf = nullptr;
  size_t bytes = 0;
  L2Flusher() {
    int l2 = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    bytes = std::max<size_t>(4 * static_cast<size_t>(l2), 64u << 20);
    CHECK_CUDA(cudaMalloc(&buf, bytes));
  }
  ~L2Flusher() { cudaFree(buf); }
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(int i) const { CHECK_CUDA(cudaMemsetAsync(buf, i & 0xff, bytes, nullptr)); }
};

/// Median milliseconds of `op` (enqueued on the legacy default stream) over
/// kTimed runs, each after an L2 flush.
template <typename Op>
double median_ms(const L2Flusher& l2, Op op) {
  for (int i = 0; i < kWarmup; ++i) op();
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> runs;
  for (int i = 0; i < kTimed; ++i) {
    l2.flush(i);
    CHECK_CUDA(cudaEventRecord(start, nullptr));
    op();
    CHECK_CUDA(cudaEventRecord(stop, nullptr));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    runs.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

}  // namespace kiln::bench
