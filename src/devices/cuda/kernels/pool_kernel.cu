#include "devices/cuda/kernels/pool_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

// The type an element is compared and summed in: float for the 16-bit
// floats, the element type otherwise (so integer maxima stay exact).
template <typename T>
struct Acc {
  using type = T;
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
__device__ inline acc_t<T> up(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}

template <typename T>
__device__ inline T down(acc_t<T> v) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return v;
}

// The start value of a maximum: -inf, or an integer type's lowest value.
template <typename A>
__device__ inline A lowest() {
  if constexpr (std::is_floating_point_v<A>)
    return -INFINITY;
  else
    return std::numeric_limits<A>::lowest();
}

template <typename A>
__device__ inline bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return v != v;
  else
    return false;
}

// One result element's coordinates, from its thread number `k` (channels
// fastest for a channels-last result, else width fastest).
struct Coord {
  int64_t n, c, o[3];
};

__device__ inline Coord coord_of(const PoolGeometry& g, int64_t k) {
  Coord r;
  if (g.channels_last) {
    r.c = k % g.channels;
    k /= g.channels;
  }
  for (int i = 2; i >= 0; --i) {
    r.o[i] = k % g.out[i];
    k /= g.out[i];
  }
  if (!g.channels_last) {
    r.c = k % g.channels;
    k /= g.channels;
  }
  r.n = k;
  return r;
}

__device__ inline int64_t out_offset(const PoolGeometry& g, const Coord& r) {
  return r.n * g.out_strides[0] + r.c * g.out_strides[1] + r.o[0] * g.out_strides[2] + r.o[1] * g.out_strides[3] +
         r.o[2] * g.out_strides[4];
}

int64_t result_count(const PoolGeometry& g) { return g.batch * g.channels * g.out[0] * g.out[1] * g.out[2]; }

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

template <typename T>
__global__ void avg_pool_kernel(const T* in, T* out, PoolGeometry g, int64_t total) {
  using A = acc_t<T>;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Coord r = coord_of(g, k);
    int64_t lo[3], hi[3];
    int64_t padded = 1, inside = 1;
    for (int i = 0; i < 3; ++i) {
      if (g.adaptive) {
        lo[i] = (r.o[i] * g.in[i]) / g.out[i];
        hi[i] = ((r.o[i] + 1) * g.in[i] + g.out[i] - 1) / g.out[i];
      } else {
        lo[i] = r.o[i] * g.stride[i] - g.pad[i];
        hi[i] = lo[i] + g.kernel[i];
        if (hi[i] > g.in[i] + g.pad[i]) hi[i] = g.in[i] + g.pad[i];
        padded *= hi[i] - lo[i];
        if (lo[i] < 0) lo[i] = 0;
        if (hi[i] > g.in[i]) hi[i] = g.in[i];
      }
      inside *= hi[i] > lo[i] ? hi[i] - lo[i] : 0;
    }
    T* dst = out + out_offset(g, r);
    if (inside == 0) {
      *dst = down<T>(A(0));
      continue;
    }
    const T* plane = in + r.n * g.in_strides[0] + r.c * g.in_strides[1];
    A sum = A(0);
    for (int64_t t = lo[0]; t < hi[0]; ++t)
      for (int64_t h = lo[1]; h < hi[1]; ++h) {
        const T* row = plane + t * g.in_strides[2] + h * g.in_strides[3];
        for (int64_t w = lo[2]; w < hi[2]; ++w) sum += up(row[w * g.in_strides[4]]);
      }
    if (g.adaptive) {
      for (int i = 0; i < 3; ++i) sum /= static_cast<A>(hi[i] - lo[i]);
    } else {
      const int64_t divisor = g.divisor != 0 ? g.divisor : (g.count_include_pad ? padded : inside);
      sum /= static_cast<A>(divisor);
    }
    *dst = down<T>(sum);
  }
}

// The maximum of window [lo, hi) with steps `step` of result element `r`'s
// plane into values/indices: a NaN wins (the last of the window), otherwise
// the first strict maximum; the position is flat within the plane.
template <typename T>
__device__ inline void window_max(const T* in, const PoolGeometry& g, const Coord& r, const int64_t lo[3],
                                  const int64_t hi[3], const int64_t step[3], T* values, int64_t* indices) {
  using A = acc_t<T>;
  const T* plane = in + r.n * g.in_strides[0] + r.c * g.in_strides[1];
  A best = lowest<A>();
  int64_t at = (lo[0] * g.in[1] + lo[1]) * g.in[2] + lo[2];
  for (int64_t t = lo[0]; t < hi[0]; t += step[0])
    for (int64_t h = lo[1]; h < hi[1]; h += step[1]) {
      const T* row = plane + t * g.in_strides[2] + h * g.in_strides[3];
      const int64_t flat = (t * g.in[1] + h) * g.in[2];
      for (int64_t w = lo[2]; w < hi[2]; w += step[2]) {
        const A v = up(row[w * g.in_strides[4]]);
        if (v > best || is_nan(v)) {
          best = v;
          at = flat + w;
        }
      }
    }
  const int64_t off = out_offset(g, r);
  values[off] = down<T>(best);
  indices[off] = at;
}

template <typename T>
__global__ void max_pool_kernel(const T* in, T* values, int64_t* indices, PoolGeometry g, int64_t total) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Coord r = coord_of(g, k);
    int64_t lo[3], hi[3], step[3];
    for (int i = 0; i < 3; ++i) {
      if (g.adaptive) {
        lo[i] = (r.o[i] * g.in[i]) / g.out[i];
        hi[i] = ((r.o[i] + 1) * g.in[i] + g.out[i] - 1) / g.out[i];
        step[i] = 1;
      } else {
        lo[i] = r.o[i] * g.stride[i] - g.pad[i];
        hi[i] = lo[i] + (g.kernel[i] - 1) * g.dilation[i] + 1;
        if (hi[i] > g.in[i]) hi[i] = g.in[i];
        while (lo[i] < 0) lo[i] += g.dilation[i];
        step[i] = g.dilation[i];
      }
    }
    window_max(in, g, r, lo, hi, step, values, indices);
  }
}

// The start of fractional window `o` of `out` along a dimension of `in`
// elements with windows of `k`, from the plane's sample `u`, in A as ATen's
// CUDA kernels compute it (which is why float16/bfloat16 inputs place their
// windows as float32 ones would, unlike ATen's CPU kernel). Clamped into
// [0, in - k] so a sample outside [0, 1) cannot reach outside the input.
template <typename A>
__device__ inline int64_t fractional_start(A u, int64_t o, int64_t in, int64_t out, int64_t k) {
  const int64_t last = in - k;
  if (o == out - 1) return last;
  const A alpha = static_cast<A>(last) / static_cast<A>(out - 1);
  const int64_t s = static_cast<int64_t>((static_cast<A>(o) + u) * alpha) - static_cast<int64_t>(u * alpha);
  return s < 0 ? 0 : (s > last ? last : s);
}

template <typename T>
__global__ void fractional_max_pool_kernel(const T* in, const T* samples, FractionalSamples s, T* values,
                                           int64_t* indices, PoolGeometry g, int64_t total) {
  using A = acc_t<T>;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Coord r = coord_of(g, k);
    const T* su = samples + r.n * s.strides[0] + r.c * s.strides[1];
    int64_t lo[3], hi[3];
    const int64_t step[3] = {1, 1, 1};
    for (int i = 0; i < 3; ++i) {
      lo[i] = s.column[i] < 0 ? 0
                              : fractional_start<A>(up(su[s.column[i] * s.strides[2]]), r.o[i], g.in[i], g.out[i],
                                                    g.kernel[i]);
      hi[i] = lo[i] + g.kernel[i];
    }
    window_max(in, g, r, lo, hi, step, values, indices);
  }
}

template <typename T>
__global__ void max_unpool_kernel(const T* in, const int64_t* indices, PoolGeometry g, int64_t is0, int64_t is1,
                                  int64_t is2, int64_t is3, int64_t is4, T* out, int64_t total,
                                  unsigned long long* first_bad) {
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = k;
    int64_t x[3];
    for (int i = 2; i >= 0; --i) {
      x[i] = rest % g.in[i];
      rest /= g.in[i];
    }
    const int64_t c = rest % g.channels, n = rest / g.channels;
    const int64_t at = indices[n * is0 + c * is1 + x[0] * is2 + x[1] * is3 + x[2] * is4];
    if (at < 0 || at >= out_plane) {
      if (first_bad != nullptr) atomicMin(first_bad, static_cast<unsigned long long>(k));
      continue;
    }
    const T v = in[n * g.in_strides[0] + c * g.in_strides[1] + x[0] * g.in_strides[2] + x[1] * g.in_strides[3] +
                   x[2] * g.in_strides[4]];
    out[(n * g.channels + c) * out_plane + at] = v;
  }
}

// Calls fn(T{}) with T the element type of `dtype`; false for a dtype
// outside the list (floating, and integers when `integers`).
template <typename Fn>
bool dispatch(DType dtype, bool integers, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return true;
    case DType::Float64: fn(double{}); return true;
    case DType::Float16: fn(__half{}); return true;
    case DType::BFloat16: fn(__nv_bfloat16{}); return true;
    default: break;
  }
  if (!integers) return false;
  switch (dtype) {
    case DType::Int64: fn(int64_t{}); return true;
    case DType::Int32: fn(int32_t{}); return true;
    case DType::Int16: fn(int16_t{}); return true;
    case DType::Int8: fn(int8_t{}); return true;
    case DType::UInt8: fn(uint8_t{}); return true;
    default: return false;
  }
}

Error unsupported(const char* op, DType dtype) {
  return set_error(Error::NotSupported,
                   std::string(op) + ": the CUDA kernel does not take dtype " + dtype_name(dtype));
}

}  // namespace

Error launch_avg_pool(const void* in, void* out, DType dtype, const PoolGeometry& g, cudaStream_t stream) {
  const int64_t total = result_count(g);
  if (total == 0) return Error::Ok;
  const bool known = dispatch(dtype, false, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out),
                                                                    g, total);
  });
  if (!known) return unsupported("avg_pool", dtype);
  return cuda_status(cudaGetLastError(), "launching the avg_pool kernel");
}

Error launch_max_pool(const void* in, void* values, int64_t* indices, DType dtype, const PoolGeometry& g,
                      cudaStream_t stream) {
  const int64_t total = result_count(g);
  if (total == 0) return Error::Ok;
  const bool known = dispatch(dtype, true, [&](auto tag) {
    using T = decltype(tag);
    max_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(in),
                                                                    static_cast<T*>(values), indices, g, total);
  });
  if (!known) return unsupported("max_pool", dtype);
  return cuda_status(cudaGetLastError(), "launching the max_pool kernel");
}

Error launch_fractional_max_pool(const void* in, const void* samples, const FractionalSamples& s, void* values,
                                 int64_t* indices, DType dtype, const PoolGeometry& g, cudaStream_t stream) {
  const int64_t total = result_count(g);
  if (total == 0) return Error::Ok;
  const bool known = dispatch(dtype, false, [&](auto tag) {
    using T = decltype(tag);
    fractional_max_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<const T*>(samples), s, static_cast<T*>(values), indices, g, total);
  });
  if (!known) return unsupported("fractional_max_pool", dtype);
  return cuda_status(cudaGetLastError(), "launching the fractional_max_pool kernel");
}

Error launch_max_unpool(const void* in, const int64_t* indices, const int64_t index_strides[5], void* out,
                        DType dtype, const PoolGeometry& g, unsigned long long* first_bad, cudaStream_t stream) {
  const int64_t total = g.batch * g.channels * g.in[0] * g.in[1] * g.in[2];
  if (total == 0) return Error::Ok;
  const bool known = dispatch(dtype, true, [&](auto tag) {
    using T = decltype(tag);
    max_unpool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(in), indices, g, index_strides[0], index_strides[1], index_strides[2],
        index_strides[3], index_strides[4], static_cast<T*>(out), total, first_bad);
  });
  if (!known) return unsupported("max_unpool", dtype);
  return cuda_status(cudaGetLastError(), "launching the max_unpool kernel");
}

}  // namespace kiln::cudadev
