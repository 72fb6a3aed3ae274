#include <cub/block/block_scan.cuh>

#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/scan_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;

struct Multiply {
  template <typename T>
  __device__ T operator()(const T& a, const T& b) const {
    return a * b;
  }
};
struct Add {
  template <typename T>
  __device__ T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

// log(exp(a) + exp(b)) without overflow: -inf adds nothing, +inf wins, NaN
// spreads; two infinities of one sign give that infinity, not exp(nan).
struct LogAddExp {
  __device__ double operator()(double a, double b) const {
    if (a != a || b != b) return NAN;
    const double lo = a < b ? a : b, hi = a < b ? b : a;
    if (lo == hi && !isfinite(lo)) return a;
    return hi + log1p(exp(lo - hi));
  }
};

// A running extreme and the position it was last reached at. Combining an
// earlier pair with a later one keeps the greater by (value with NaN above
// everything, position): associative, so CUB may group the combinations in
// any order, and later positions win ties as in ATen's sequential kernel.
template <typename T>
struct Extreme {
  T value;
  int64_t index;
};

template <typename T>
__device__ bool is_nan_value(T v) {
  return v != v;
}

template <typename T, bool Max>
struct PickExtreme {
  __device__ Extreme<T> operator()(const Extreme<T>& a, const Extreme<T>& b) const {
    const Extreme<T>& later = a.index > b.index ? a : b;
    const Extreme<T>& earlier = a.index > b.index ? b : a;
    if (is_nan_value(later.value)) return later;
    if (is_nan_value(earlier.value)) return earlier;
    const bool take = Max ? later.value >= earlier.value : later.value <= earlier.value;
    return take ? later : earlier;
  }
};

template <typename T>
__device__ T load_as(const void* p, DType dtype, int64_t i);
template <>
__device__ double load_as<double>(const void* p, DType dtype, int64_t i) { return load_double(p, dtype, i); }
template <>
__device__ int64_t load_as<int64_t>(const void* p, DType dtype, int64_t i) { return load_int(p, dtype, i); }

__device__ void store_as(void* p, DType dtype, int64_t i, double v) { store_double(p, dtype, i, v); }
__device__ void store_as(void* p, DType dtype, int64_t i, int64_t v) { store_int(p, dtype, i, v); }

template <typename T, typename Op>
__global__ void scan_kernel(const void* in, DType in_dtype, StridedIndexer in_index, void* out, DType out_dtype,
                            int64_t size, int64_t inner, T identity) {
  using BlockScan = cub::BlockScan<T, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  __shared__ T carry;
  const int64_t line = blockIdx.x;
  const int64_t base = (line / inner) * size * inner + line % inner;
  if (threadIdx.x == 0) carry = identity;
  __syncthreads();
  for (int64_t tile = 0; tile < size; tile += kThreads) {
    const int64_t i = tile + threadIdx.x;
    const int64_t k = base + i * inner;
    T v = i < size ? load_as<T>(in, in_dtype, in_index.offset(k)) : identity;
    T total;
    BlockScan(temp).InclusiveScan(v, v, Op(), total);
    const T prefix = carry;
    v = Op()(prefix, v);
    if (i < size) store_as(out, out_dtype, k, v);
    __syncthreads();
    if (threadIdx.x == 0) carry = Op()(prefix, total);
    __syncthreads();
  }
}

template <typename T, bool Max>
__global__ void cum_extreme_kernel(const void* in, DType in_dtype, StridedIndexer in_index, void* values,
                                   int64_t* indices, int64_t size, int64_t inner) {
  using Pair = Extreme<T>;
  using BlockScan = cub::BlockScan<Pair, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  __shared__ Pair carry;
  const int64_t line = blockIdx.x;
  const int64_t base = (line / inner) * size * inner + line % inner;
  for (int64_t tile = 0; tile < size; tile += kThreads) {
    const int64_t i = tile + threadIdx.x;
    const int64_t k = base + i * inner;
    // Past the end of the line a thread repeats the line's last element: it
    // only ever combines with positions after the valid ones.
    const int64_t at = i < size ? i : size - 1;
    Pair v{load_as<T>(in, in_dtype, in_index.offset(base + at * inner)), at};
    Pair total;
    BlockScan(temp).InclusiveScan(v, v, PickExtreme<T, Max>(), total);
    if (tile > 0) v = PickExtreme<T, Max>()(carry, v);
    if (i < size) {
      store_as(values, in_dtype, k, v.value);
      indices[k] = v.index;
    }
    __syncthreads();
    if (threadIdx.x == 0) carry = tile > 0 ? PickExtreme<T, Max>()(carry, total) : total;
    __syncthreads();
  }
}

template <typename T>
Error launch_extreme_typed(const void* in, DType in_dtype, const StridedIndexer& idx, void* values,
                           int64_t* indices, int64_t lines, int64_t size, int64_t inner, bool max,
                           cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(lines));
  if (max)
    cum_extreme_kernel<T, true><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, values, indices, size, inner);
  else
    cum_extreme_kernel<T, false><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, values, indices, size, inner);
  return cuda_status(cudaGetLastError(), "launching the cummax/cummin kernel");
}

template <typename T>
Error launch_typed(const void* in, DType in_dtype, const StridedIndexer& idx, void* out, DType out_dtype,
                   int64_t lines, int64_t size, int64_t inner, ScanOp op, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(lines));
  if (op == ScanOp::LogSumExp) {
    if constexpr (std::is_same_v<T, double>)
      scan_kernel<double, LogAddExp><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, out, out_dtype, size, inner,
                                                                    -INFINITY);
  } else if (op == ScanOp::Sum)
    scan_kernel<T, Add><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, out, out_dtype, size, inner, T(0));
  else
    scan_kernel<T, Multiply><<<grid, kThreads, 0, stream>>>(in, in_dtype, idx, out, out_dtype, size, inner, T(1));
  return cuda_status(cudaGetLastError(), "launching the scan kernel");
}

}  // namespace

Error launch_cum_extreme(const void* in, DType in_dtype, const StridedIndexer& in_index, void* values,
                         int64_t* indices, const LineShape& line, bool max, cudaStream_t stream) {
  const int64_t lines = line.lines(), size = line.size, inner = line.inner;
  if (lines == 0 || size == 0) return Error::Ok;
  if (lines > 2147483647)
    return set_error(Error::InvalidArgument, "scan over " + std::to_string(lines) + " lines exceeds the grid limit");
  if (is_integral_dtype(in_dtype))
    return launch_extreme_typed<int64_t>(in, in_dtype, in_index, values, indices, lines, size, inner, max, stream);
  if (is_floating_dtype(in_dtype))
    return launch_extreme_typed<double>(in, in_dtype, in_index, values, indices, lines, size, inner, max, stream);
  return set_error(Error::NotSupported, std::string("cummax/cummin of dtype ") + dtype_name(in_dtype) +
                                            " is not supported on CUDA");
}

Error launch_scan(const void* in, DType in_dtype, const StridedIndexer& in_index, void* out, DType out_dtype,
                  const LineShape& line, ScanOp op, cudaStream_t stream) {
  const int64_t lines = line.lines(), size = line.size, inner = line.inner;
  if (lines == 0 || size == 0) return Error::Ok;
  if (lines > 2147483647)
    return set_error(Error::InvalidArgument, "scan over " + std::to_string(lines) + " lines exceeds the grid limit");
  if (op == ScanOp::LogSumExp && !is_floating_dtype(out_dtype))
    return set_error(Error::NotSupported, std::string("logcumsumexp of dtype ") + dtype_name(out_dtype) +
                                              " is not supported on CUDA (floating dtypes only)");
  if (is_integral_dtype(out_dtype))
    return launch_typed<int64_t>(in, in_dtype, in_index, out, out_dtype, lines, size, inner, op, stream);
  if (is_floating_dtype(out_dtype))
    return launch_typed<double>(in, in_dtype, in_index, out, out_dtype, lines, size, inner, op, stream);
  return set_error(Error::NotSupported, std::string("scan of dtype ") + dtype_name(out_dtype) +
                                            " is not supported on CUDA yet (complex scans run on the CPU)");
}

}  // namespace kiln::cudadev
