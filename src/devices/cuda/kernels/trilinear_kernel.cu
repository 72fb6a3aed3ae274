#include "devices/cuda/kernels/trilinear_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <thrust/complex.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int64_t kMaxBlocks = 65535;

template <typename T>
struct IsComplex : std::false_type {};
template <typename F>
struct IsComplex<thrust::complex<F>> : std::true_type {};

// The type products are summed in: float for the 16-bit floats, the element
// type for float/double/complex, uint64 (wrapping) for integers.
template <typename T>
struct Acc {
  using type = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
};
template <>
struct Acc<__half> {
  using type = float;
};
template <>
struct Acc<__nv_bfloat16> {
  using type = float;
};
template <typename T>
using acc_t = typename Acc<T>::type;

template <typename T>
__device__ inline acc_t<T> load(const T* p) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(*p);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(*p);
  else if constexpr (std::is_integral_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(*p));
  else
    return *p;
}

template <typename T>
__device__ inline T store(acc_t<T> v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<int64_t>(v));
  else
    return v;
}

template <typename A>
__device__ inline A shuffle_down(A v, int delta) {
  if constexpr (IsComplex<A>::value)
    return A(__shfl_down_sync(0xffffffffu, v.real(), delta), __shfl_down_sync(0xffffffffu, v.imag(), delta));
  else if constexpr (std::is_same_v<A, uint64_t>)
    return static_cast<uint64_t>(__shfl_down_sync(0xffffffffu, static_cast<unsigned long long>(v), delta));
  else
    return __shfl_down_sync(0xffffffffu, v, delta);
}

// Offsets of row-major position `k` over `ndim` dims of `sizes` in each operand.
__device__ inline void offsets(int64_t k, int ndim, const int64_t* sizes,
                               const int64_t (*strides)[TrilinearGeometry::kMaxDims], int64_t off[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    const int64_t x = k % sizes[d];
    k /= sizes[d];
    off[0] += x * strides[0][d];
    off[1] += x * strides[1][d];
    off[2] += x * strides[2][d];
  }
}

// One result element's sum over the summed positions first, first + step, ...
template <typename T>
__device__ inline acc_t<T> partial_sum(const T* a, const T* b, const T* c, const TrilinearGeometry& g,
                                       const int64_t base[3], int64_t first, int64_t step) {
  acc_t<T> acc = acc_t<T>(0);
  for (int64_t k = first; k < g.terms; k += step) {
    int64_t off[3];
    offsets(k, g.sum_ndim, g.sum_sizes, g.sum_strides, off);
    acc += load(a + base[0] + off[0]) * load(b + base[1] + off[1]) * load(c + base[2] + off[2]);
  }
  return acc;
}

template <typename T>
__global__ void trilinear_thread_kernel(const T* a, const T* b, const T* c, T* out, TrilinearGeometry g) {
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < g.outputs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t base[3];
    offsets(o, g.out_ndim, g.out_sizes, g.out_strides, base);
    out[o] = store<T>(partial_sum(a, b, c, g, base, 0, 1));
  }
}

// Warps stride over the result elements (the loop bound is uniform within a
// warp, so every lane reaches every shuffle).
template <typename T>
__global__ void trilinear_warp_kernel(const T* a, const T* b, const T* c, T* out, TrilinearGeometry g) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  for (int64_t o = warp; o < g.outputs; o += warps) {
    int64_t base[3];
    offsets(o, g.out_ndim, g.out_sizes, g.out_strides, base);
    acc_t<T> acc = partial_sum(a, b, c, g, base, lane, kWarp);
    for (int delta = kWarp / 2; delta > 0; delta /= 2) acc += shuffle_down(acc, delta);
    if (lane == 0) out[o] = store<T>(acc);
  }
}

unsigned blocks_for(int64_t items, int64_t per_block) {
  const int64_t b = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

template <typename Fn>
bool dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return true;
    case DType::Float64: fn(double{}); return true;
    case DType::Float16: fn(__half{}); return true;
    case DType::BFloat16: fn(__nv_bfloat16{}); return true;
    case DType::Complex64: fn(thrust::complex<float>{}); return true;
    case DType::Complex128: fn(thrust::complex<double>{}); return true;
    case DType::Int64: fn(int64_t{}); return true;
    case DType::Int32: fn(int32_t{}); return true;
    case DType::Int16: fn(int16_t{}); return true;
    case DType::Int8: fn(int8_t{}); return true;
    case DType::UInt8: fn(uint8_t{}); return true;
    default: return false;
  }
}

}  // namespace

bool trilinear_dtype(DType dtype) {
  return dispatch(dtype, [](auto) {});
}

Error launch_trilinear(const void* a, const void* b, const void* c, void* out, DType dtype,
                       const TrilinearGeometry& g, cudaStream_t stream) {
  if (g.outputs == 0) return Error::Ok;
  const bool warp = g.terms >= kWarp;
  const bool known = dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    const T* pc = static_cast<const T*>(c);
    T* po = static_cast<T*>(out);
    if (warp)
      trilinear_warp_kernel<T><<<blocks_for(g.outputs, kThreads / kWarp), kThreads, 0, stream>>>(pa, pb, pc, po, g);
    else
      trilinear_thread_kernel<T><<<blocks_for(g.outputs, kThreads), kThreads, 0, stream>>>(pa, pb, pc, po, g);
  });
  if (!known)
    return set_error(Error::NotSupported,
                     std::string("_trilinear: the CUDA kernel does not take dtype ") + dtype_name(dtype));
  return cuda_status(cudaGetLastError(), "launching the _trilinear kernel");
}

}  // namespace kiln::cudadev
