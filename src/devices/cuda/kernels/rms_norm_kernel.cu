#include "devices/cuda/kernels/rms_norm_kernel.h"

#include <cub/block/block_reduce.cuh>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int64_t kWarpRowLimit = 1024;

template <typename A>
__device__ A weight_at(const RmsNormArgs& a, int64_t i) {
  return static_cast<A>(load_double(a.weight, a.weight_dtype, a.weight_index.offset(i)));
}

template <typename T>
__device__ compute_t<T> x_at(const RmsNormArgs& a, const T* x, int64_t k) {
  return widen(x[a.x_contiguous ? k : a.x_index.offset(k)]);
}

__device__ float rsqrt_of(float v) { return rsqrtf(v); }
__device__ double rsqrt_of(double v) { return rsqrt(v); }

// y and rstd for one row, given the row's sum of squares.
template <typename T>
__device__ void finish_row(const RmsNormArgs& a, int64_t row, compute_t<T> sum, int64_t first, int64_t step) {
  using A = compute_t<T>;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  // inner == 0 gives 0/0: a NaN rstd, as ATen's mean over nothing.
  const A r = rsqrt_of(sum / static_cast<A>(a.inner) + static_cast<A>(a.eps));
  if (first == 0) static_cast<A*>(a.rstd)[row] = r;
  const int64_t base = row * a.inner;
  for (int64_t i = first; i < a.inner; i += step) {
    A v = x_at(a, x, base + i) * r;
    if (a.weight != nullptr) v *= weight_at<A>(a, i);
    y[base + i] = narrow<T>(v);
  }
}

template <typename T>
__global__ void rms_norm_warp_kernel(RmsNormArgs a) {
  using A = compute_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= a.rows) return;  // the whole warp leaves together
  const T* x = static_cast<const T*>(a.x);
  const int64_t base = row * a.inner;
  A sum = 0;
  for (int64_t i = lane; i < a.inner; i += 32) {
    const A v = x_at(a, x, base + i);
    sum += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  finish_row<T>(a, row, sum, lane, 32);
}

template <typename T>
__global__ void rms_norm_block_kernel(RmsNormArgs a) {
  using A = compute_t<T>;
  using BlockReduce = cub::BlockReduce<A, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ A total;
  const int64_t row = blockIdx.x;
  const T* x = static_cast<const T*>(a.x);
  const int64_t base = row * a.inner;
  A sum = 0;
  for (int64_t i = threadIdx.x; i < a.inner; i += kThreads) {
    const A v = x_at(a, x, base + i);
    sum += v * v;
  }
  sum = BlockReduce(temp).Sum(sum);
  if (threadIdx.x == 0) total = sum;
  __syncthreads();
  finish_row<T>(a, row, total, threadIdx.x, kThreads);
}

template <typename T>
Error launch_typed(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.inner <= kWarpRowLimit) {
    const int64_t blocks = (a.rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if (blocks > 2147483647) return set_error(Error::InvalidArgument, "rms_norm over too many rows for one grid");
    rms_norm_warp_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  } else {
    if (a.rows > 2147483647) return set_error(Error::InvalidArgument, "rms_norm over too many rows for one grid");
    rms_norm_block_kernel<T><<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(a);
  }
  return cuda_status(cudaGetLastError(), "launching the rms_norm kernel");
}

}  // namespace

Error launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return Error::Ok;
  switch (a.dtype) {
    case DType::Float32: return launch_typed<float>(a, stream);
    case DType::Float64: return launch_typed<double>(a, stream);
    case DType::Float16: return launch_typed<__half>(a, stream);
    case DType::BFloat16: return launch_typed<__nv_bfloat16>(a, stream);
    default:
      return set_error(Error::NotSupported,
                       std::string("rms_norm of dtype ") + dtype_name(a.dtype) + " is not supported on CUDA");
  }
}

}  // namespace kiln::cudadev
