#include "devices/cuda/kernels/scatter_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>
#include <string>
#include <type_traits>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/atomic_ops.cuh"

namespace kiln::cudadev {

namespace {

constexpr int kThreads = 256;

// Element types only sum reaches: bool (a sum of bools is their OR) and complex.
struct BoolByte {
  uint8_t b;
};
struct ComplexF {
  float re, im;
};
struct ComplexD {
  double re, im;
};
struct Bytes16 {
  uint64_t lo, hi;
};

template <typename T>
constexpr bool kLowFloat = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

unsigned grid(int64_t numel) {
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

__device__ int64_t read_index(const void* data, DType dtype, int64_t off) {
  return dtype == DType::Int32 ? static_cast<const int32_t*>(data)[off] : static_cast<const int64_t*>(data)[off];
}

__device__ int64_t index_offset(const ScatterPlan& p, int64_t k) {
  int64_t off = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    off += (k % p.sizes[d]) * p.index_strides[d];
    k /= p.sizes[d];
  }
  return off;
}

// The offsets of element k in out, src and the counts; false when its index
// value is out of range (only possible under graph capture, where the host
// cannot check first).
__device__ bool locate(const ScatterPlan& p, int64_t k, int64_t& out_off, int64_t& src_off, int64_t& count_off) {
  int64_t rest = k, ioff = 0;
  out_off = 0;
  src_off = 0;
  count_off = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    const int64_t c = rest % p.sizes[d];
    rest /= p.sizes[d];
    ioff += c * p.index_strides[d];
    src_off += c * p.src_strides[d];
    if (d != p.dim) {
      out_off += c * p.out_strides[d];
      count_off += c * p.count_strides[d];
    }
  }
  const int64_t v = read_index(p.index, p.index_dtype, ioff);
  if (v < 0 || v >= p.dim_size) return false;
  out_off += v * p.out_strides[p.dim];
  count_off += v * p.count_strides[p.dim];
  return true;
}

#define KILN_SCATTER_LOOP(k) \
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < p.numel; \
       k += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void index_check_kernel(ScatterPlan p, unsigned long long* first_bad) {
  KILN_SCATTER_LOOP(k) {
    const int64_t v = read_index(p.index, p.index_dtype, index_offset(p, k));
    if (v < 0 || v >= p.dim_size) atomicMin(first_bad, static_cast<unsigned long long>(k));
  }
}

template <typename W>
__global__ void assign_kernel(ScatterPlan p) {
  W* out = static_cast<W*>(p.out);
  const W* src = static_cast<const W*>(p.src);
  KILN_SCATTER_LOOP(k) {
    int64_t o = 0, s = 0, c = 0;
    if (locate(p, k, o, s, c)) out[o] = src[s];
  }
}

__global__ void assign_value_kernel(ScatterPlan p) {
  KILN_SCATTER_LOOP(k) {
    int64_t o = 0, s = 0, c = 0;
    if (!locate(p, k, o, s, c)) continue;
    if (p.dtype == DType::Complex64) {
      static_cast<float*>(p.out)[2 * o] = static_cast<float>(p.value);
      static_cast<float*>(p.out)[2 * o + 1] = 0.0f;
    } else if (p.dtype == DType::Complex128) {
      static_cast<double*>(p.out)[2 * o] = p.value;
      static_cast<double*>(p.out)[2 * o + 1] = 0.0;
    } else {
      store_double(p.out, p.dtype, o, p.value);
    }
  }
}

template <typename T>
__device__ float as_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return __bfloat162float(v);
  }
}

template <typename T>
__device__ T from_float_rn(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else {
    return __float2bfloat16_rn(v);
  }
}

template <typename T>
__device__ T multiply(T a, T b) {
  if constexpr (kLowFloat<T>) {
    return from_float_rn<T>(as_float(a) * as_float(b));
  } else if constexpr (std::is_integral_v<T>) {
    // Wraps as the dtype's own arithmetic does (no signed overflow).
    using W = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
    return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
  } else {
    return a * b;
  }
}

// The NaN rules of ATen's CUDA atomics: a NaN on either side wins. Ties and
// the NaN kept follow the operand order ATen's float and half paths use.
template <typename T>
__device__ T fold_max(T old, T v) {
  if constexpr (kLowFloat<T>) {
    const float o = as_float(old), x = as_float(v);
    return x != x ? v : (o < x ? v : old);
  } else if constexpr (std::is_floating_point_v<T>) {
    return old != old ? old : (v < old ? old : v);
  } else {
    return v > old ? v : old;
  }
}

template <typename T>
__device__ T fold_min(T old, T v) {
  if constexpr (kLowFloat<T>) {
    const float o = as_float(old), x = as_float(v);
    return x != x ? v : (x < o ? v : old);
  } else if constexpr (std::is_floating_point_v<T>) {
    return old != old ? old : (old < v ? old : v);
  } else {
    return v < old ? v : old;
  }
}

template <typename T, ScatterOp OP>
__device__ void fold(T* dst, T v) {
  if constexpr (OP == ScatterOp::Sum) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || kLowFloat<T>) {
      atomicAdd(dst, v);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      atomicAdd(reinterpret_cast<unsigned int*>(dst), static_cast<unsigned int>(v));
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(dst), static_cast<unsigned long long>(v));
    } else if constexpr (std::is_same_v<T, BoolByte>) {
      // Every writer that writes, writes 1.
      if (v.b != 0) dst->b = 1;
    } else if constexpr (std::is_same_v<T, ComplexF> || std::is_same_v<T, ComplexD>) {
      atomicAdd(&dst->re, v.re);
      atomicAdd(&dst->im, v.im);
    } else {
      atomic_add_narrow(dst, v);
    }
  } else if constexpr (OP == ScatterOp::Prod) {
    atomic_update(dst, [v](T a) { return multiply(a, v); });
  } else if constexpr (OP == ScatterOp::Max) {
    if constexpr (std::is_same_v<T, int32_t>) {
      atomicMax(dst, v);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicMax(reinterpret_cast<long long*>(dst), static_cast<long long>(v));
    } else {
      atomic_update(dst, [v](T a) { return fold_max(a, v); });
    }
  } else {
    if constexpr (std::is_same_v<T, int32_t>) {
      atomicMin(dst, v);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicMin(reinterpret_cast<long long*>(dst), static_cast<long long>(v));
    } else {
      atomic_update(dst, [v](T a) { return fold_min(a, v); });
    }
  }
}

template <typename T, ScatterOp OP>
__global__ void reduce_kernel(ScatterPlan p) {
  T* out = static_cast<T*>(p.out);
  const T* src = static_cast<const T*>(p.src);
  KILN_SCATTER_LOOP(k) {
    int64_t o = 0, s = 0, c = 0;
    if (locate(p, k, o, s, c)) fold<T, OP>(out + o, src[s]);
  }
}

template <typename T>
__global__ void identity_kernel(ScatterPlan p, T value) {
  T* out = static_cast<T*>(p.out);
  KILN_SCATTER_LOOP(k) {
    int64_t o = 0, s = 0, c = 0;
    if (locate(p, k, o, s, c)) out[o] = value;
  }
}

__global__ void count_kernel(ScatterPlan p, unsigned long long* counts) {
  KILN_SCATTER_LOOP(k) {
    int64_t o = 0, s = 0, c = 0;
    if (locate(p, k, o, s, c)) atomicAdd(counts + c, 1ull);
  }
}

#undef KILN_SCATTER_LOOP

// x / n with n as ATen's count tensor holds it: accumulated one at a time in
// the dtype, a floating count stops growing where the next integer is not
// representable and an integer one wraps (0 then reads as 1).
template <typename T>
__device__ T divide_by_count(T x, unsigned long long n) {
  const auto capped = [n](unsigned long long cap) { return n < cap ? n : cap; };
  if constexpr (std::is_same_v<T, __half>) {
    return from_float_rn<T>(as_float(x) / static_cast<float>(capped(2048)));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return from_float_rn<T>(as_float(x) / static_cast<float>(capped(256)));
  } else if constexpr (std::is_same_v<T, float>) {
    return x / static_cast<float>(capped(1ull << 24));
  } else if constexpr (std::is_same_v<T, double>) {
    return x / static_cast<double>(capped(1ull << 53));
  } else {
    T c = static_cast<T>(n);
    if (c == 0) c = 1;
    const int64_t a = static_cast<int64_t>(x), b = static_cast<int64_t>(c);
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) --q;
    return static_cast<T>(q);
  }
}

template <typename T>
__global__ void mean_kernel(T* out, StridedIndexer out_index, const unsigned long long* counts, bool include_self,
                            int64_t numel) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < numel;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const unsigned long long n = counts[k];
    if (n == 0) continue;  // divided by 1 (ATen's count of an untouched element)
    T& x = out[out_index.offset(k)];
    x = divide_by_count(x, n + (include_self ? 1 : 0));
  }
}

template <typename T>
T identity_value(ScatterOp op) {
  if constexpr (std::is_same_v<T, __half>) {
    __half_raw r;
    r.x = op == ScatterOp::Prod ? 0x3C00 : op == ScatterOp::Max ? 0xFC00 : op == ScatterOp::Min ? 0x7C00 : 0;
    return __half(r);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat16_raw r;
    r.x = op == ScatterOp::Prod ? 0x3F80 : op == ScatterOp::Max ? 0xFF80 : op == ScatterOp::Min ? 0x7F80 : 0;
    return __nv_bfloat16(r);
  } else if constexpr (std::is_same_v<T, BoolByte> || std::is_same_v<T, ComplexF> ||
                       std::is_same_v<T, ComplexD>) {
    return T{};  // only sum reaches these: 0
  } else {
    using L = std::numeric_limits<T>;
    if (op == ScatterOp::Prod) return T(1);
    if constexpr (L::has_infinity) {
      if (op == ScatterOp::Max) return -L::infinity();
      if (op == ScatterOp::Min) return L::infinity();
    } else {
      if (op == ScatterOp::Max) return L::lowest();
      if (op == ScatterOp::Min) return L::max();
    }
    return T(0);
  }
}

// Calls f(T{}) with the element type of a dtype every reduction takes.
template <typename F>
bool visit_real(DType dtype, F&& f) {
  switch (dtype) {
    case DType::UInt8: f(uint8_t{}); return true;
    case DType::Int8: f(int8_t{}); return true;
    case DType::Int16: f(int16_t{}); return true;
    case DType::Int32: f(int32_t{}); return true;
    case DType::Int64: f(int64_t{}); return true;
    case DType::Float16: f(__half{}); return true;
    case DType::BFloat16: f(__nv_bfloat16{}); return true;
    case DType::Float32: f(float{}); return true;
    case DType::Float64: f(double{}); return true;
    default: return false;
  }
}

// Calls f(T{}) for the dtypes only sum takes.
template <typename F>
bool visit_sum_only(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool: f(BoolByte{}); return true;
    case DType::Complex64: f(ComplexF{}); return true;
    case DType::Complex128: f(ComplexD{}); return true;
    default: return false;
  }
}

Error unsupported(DType dtype) {
  return set_error(Error::NotSupported, std::string("the CUDA scatter kernels do not take dtype ") +
                                            dtype_name(dtype));
}

}  // namespace

bool scatter_reduce_supports(ScatterOp op, DType dtype) {
  const bool real = dtype == DType::UInt8 || dtype == DType::Int8 || dtype == DType::Int16 ||
                    dtype == DType::Int32 || dtype == DType::Int64 || dtype == DType::Float16 ||
                    dtype == DType::BFloat16 || dtype == DType::Float32 || dtype == DType::Float64;
  if (op == ScatterOp::Sum)
    return real || dtype == DType::Bool || dtype == DType::Complex64 || dtype == DType::Complex128;
  return real;
}

Error launch_scatter_index_check(const ScatterPlan& p, unsigned long long* first_bad, cudaStream_t stream) {
  if (p.numel == 0) return Error::Ok;
  index_check_kernel<<<grid(p.numel), kThreads, 0, stream>>>(p, first_bad);
  return cuda_status(cudaGetLastError(), "launching the scatter index check kernel");
}

Error launch_scatter(const ScatterPlan& p, ScatterOp op, cudaStream_t stream) {
  if (p.numel == 0) return Error::Ok;
  const unsigned blocks = grid(p.numel);
  if (op == ScatterOp::Assign) {
    if (p.src == nullptr) {
      assign_value_kernel<<<blocks, kThreads, 0, stream>>>(p);
    } else {
      switch (element_size(p.dtype)) {
        case 1: assign_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(p); break;
        case 2: assign_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(p); break;
        case 4: assign_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(p); break;
        case 8: assign_kernel<uint64_t><<<blocks, kThreads, 0, stream>>>(p); break;
        case 16: assign_kernel<Bytes16><<<blocks, kThreads, 0, stream>>>(p); break;
        default: return unsupported(p.dtype);
      }
    }
    return cuda_status(cudaGetLastError(), "launching the scatter kernel");
  }
  if (!scatter_reduce_supports(op, p.dtype)) return unsupported(p.dtype);
  const auto launch = [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ScatterOp::Sum: reduce_kernel<T, ScatterOp::Sum><<<blocks, kThreads, 0, stream>>>(p); break;
      case ScatterOp::Prod: reduce_kernel<T, ScatterOp::Prod><<<blocks, kThreads, 0, stream>>>(p); break;
      case ScatterOp::Max: reduce_kernel<T, ScatterOp::Max><<<blocks, kThreads, 0, stream>>>(p); break;
      case ScatterOp::Min: reduce_kernel<T, ScatterOp::Min><<<blocks, kThreads, 0, stream>>>(p); break;
      default: break;
    }
  };
  if (!visit_real(p.dtype, launch))
    visit_sum_only(p.dtype, [&](auto tag) {
      using T = decltype(tag);
      reduce_kernel<T, ScatterOp::Sum><<<blocks, kThreads, 0, stream>>>(p);
    });
  return cuda_status(cudaGetLastError(), "launching the scatter reduction kernel");
}

Error launch_scatter_identity(const ScatterPlan& p, ScatterOp op, cudaStream_t stream) {
  if (p.numel == 0) return Error::Ok;
  if (op == ScatterOp::Assign || !scatter_reduce_supports(op, p.dtype)) return unsupported(p.dtype);
  const unsigned blocks = grid(p.numel);
  const auto launch = [&](auto tag) {
    using T = decltype(tag);
    identity_kernel<T><<<blocks, kThreads, 0, stream>>>(p, identity_value<T>(op));
  };
  if (!visit_real(p.dtype, launch)) visit_sum_only(p.dtype, launch);
  return cuda_status(cudaGetLastError(), "launching the scatter identity kernel");
}

Error launch_scatter_count(const ScatterPlan& p, unsigned long long* counts, cudaStream_t stream) {
  if (p.numel == 0) return Error::Ok;
  count_kernel<<<grid(p.numel), kThreads, 0, stream>>>(p, counts);
  return cuda_status(cudaGetLastError(), "launching the scatter count kernel");
}

Error launch_scatter_mean(void* out, DType dtype, const StridedIndexer& out_index, const unsigned long long* counts,
                          bool include_self, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  const bool known = visit_real(dtype, [&](auto tag) {
    using T = decltype(tag);
    mean_kernel<T><<<grid(numel), kThreads, 0, stream>>>(static_cast<T*>(out), out_index, counts, include_self,
                                                           numel);
  });
  if (!known) return unsupported(dtype);
  return cuda_status(cudaGetLastError(), "launching the scatter mean kernel");
}

}  // namespace kiln::cudadev
