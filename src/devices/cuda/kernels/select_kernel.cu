#include <cmath>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_access.cuh"
#include "devices/cuda/kernels/select_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

// Elements move as raw words of their width: picking never converts.
template <typename W>
__global__ void pick_kernel(const W* sorted, const int64_t* positions, int64_t lines, int64_t count, int64_t pick,
                            W* values, int64_t* indices) {
  for (int64_t l = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; l < lines;
       l += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t src = l * count + pick;
    values[l] = sorted[src];
    indices[l] = positions[src];
  }
}

template <typename W>
__device__ void copy_word(const void* from, int64_t i, void* to) {
  *static_cast<W*>(to) = static_cast<const W*>(from)[i];
}

__device__ void copy_element(const void* from, int64_t i, void* to, int bytes) {
  switch (bytes) {
    case 1: copy_word<uint8_t>(from, i, to); break;
    case 2: copy_word<uint16_t>(from, i, to); break;
    case 4: copy_word<uint32_t>(from, i, to); break;
    default: copy_word<uint64_t>(from, i, to); break;
  }
}

// One thread: the sort has already done the work, what is left is finding
// where the NaNs start (a binary search, since they are all at the end).
__global__ void median_kernel(const void* sorted, DType dtype, int bytes, bool floating, int64_t n, bool ignore_nan,
                              int64_t empty_integer, void* out) {
  if (n == 0) {
    if (floating) store_double(out, dtype, 0, NAN);
    else store_int(out, dtype, 0, empty_integer);
    return;
  }
  int64_t numbers = n;  // elements before the first NaN
  if (floating) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const double v = load_double(sorted, dtype, mid);
      if (v != v) hi = mid;
      else lo = mid + 1;
    }
    numbers = lo;
  }
  if (numbers < n && !ignore_nan) {
    copy_element(sorted, n - 1, out, bytes);
  } else if (numbers == 0) {
    copy_element(sorted, 0, out, bytes);  // all NaN
  } else {
    copy_element(sorted, (numbers - 1) / 2, out, bytes);
  }
}

unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < (1 << 16) ? blocks : (1 << 16));
}

}  // namespace

Error launch_pick_sorted(const void* sorted, const int64_t* positions, DType dtype, int64_t lines, int64_t count,
                         int64_t pick, void* values, int64_t* indices, cudaStream_t stream) {
  if (lines == 0) return Error::Ok;
  const unsigned grid = grid_for(lines);
  switch (element_size(dtype)) {
    case 1:
      pick_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(sorted), positions, lines, count, pick,
                                                 static_cast<uint8_t*>(values), indices);
      break;
    case 2:
      pick_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint16_t*>(sorted), positions, lines, count, pick,
                                                 static_cast<uint16_t*>(values), indices);
      break;
    case 4:
      pick_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint32_t*>(sorted), positions, lines, count, pick,
                                                 static_cast<uint32_t*>(values), indices);
      break;
    case 8:
      pick_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint64_t*>(sorted), positions, lines, count, pick,
                                                 static_cast<uint64_t*>(values), indices);
      break;
    default: return set_error(Error::NotSupported, std::string("kthvalue of dtype ") + dtype_name(dtype));
  }
  return cuda_status(cudaGetLastError(), "launching the kthvalue pick kernel");
}

Error launch_median_sorted(const void* sorted, DType dtype, int64_t n, bool ignore_nan, int64_t empty_integer,
                           void* out, cudaStream_t stream) {
  const int bytes = static_cast<int>(element_size(dtype));
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
    return set_error(Error::NotSupported, std::string("median of dtype ") + dtype_name(dtype));
  median_kernel<<<1, 1, 0, stream>>>(sorted, dtype, bytes, is_floating_dtype(dtype), n, ignore_nan, empty_integer,
                                     out);
  return cuda_status(cudaGetLastError(), "launching the median kernel");
}

}  // namespace kiln::cudadev
