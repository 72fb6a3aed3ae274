// Device-side access to tensors of any dtype and strides, for the CUDA ops
// that are not on a hot path (scans, random fills, index ops): elements are
// read as int64 (integers, bool) or double (floating) and stored back with
// ATen's casts, and a StridedIndexer maps a row-major element number to its
// offset, so one kernel serves every dtype and layout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::cudadev {

/// Up to kMaxDims dimensions: sizes and element strides by value, so a kernel
/// takes it as an argument.
struct StridedIndexer {
  static constexpr int kMaxDims = 12;
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  /// Offset in elements of row-major element `k`.
  __host__ __device__ int64_t offset(int64_t k) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t s = sizes[d];
      off += (k % s) * strides[d];
      k /= s;
    }
    return off;
  }
};

/// One dimension of a tensor seen as `outer` x `size` x `inner` (row-major):
/// how the ops along a dimension (scans, sorts, selections) walk their lines.
struct LineShape {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;
  __host__ __device__ int64_t lines() const { return outer * inner; }

  /// The lines along dimension `dim` (already wrapped) of `sizes`.
  static LineShape along(const int64_t* sizes, int64_t ndim, int64_t dim) {
    LineShape shape;
    for (int64_t i = 0; i < ndim; ++i) {
      if (i < dim) shape.outer *= sizes[i];
      else if (i == dim) shape.size = sizes[i];
      else shape.inner *= sizes[i];
    }
    return shape;
  }
};

__device__ inline double load_double(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Float32: return static_cast<const float*>(p)[i];
    case DType::Float64: return static_cast<const double*>(p)[i];
    case DType::Float16: return __half2float(static_cast<const __half*>(p)[i]);
    case DType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] != 0;
    case DType::UInt8: return static_cast<const uint8_t*>(p)[i];
    case DType::Int8: return static_cast<const int8_t*>(p)[i];
    case DType::Int16: return static_cast<const int16_t*>(p)[i];
    case DType::Int32: return static_cast<const int32_t*>(p)[i];
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::UInt16: return static_cast<const uint16_t*>(p)[i];
    case DType::UInt32: return static_cast<const uint32_t*>(p)[i];
    case DType::UInt64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    default: return 0.0;
  }
}

__device__ inline int64_t load_int(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Bool: return static_cast<const uint8_t*>(p)[i] != 0;
    case DType::UInt8: return static_cast<const uint8_t*>(p)[i];
    case DType::Int8: return static_cast<const int8_t*>(p)[i];
    case DType::Int16: return static_cast<const int16_t*>(p)[i];
    case DType::Int32: return static_cast<const int32_t*>(p)[i];
    case DType::Int64: return static_cast<const int64_t*>(p)[i];
    case DType::UInt16: return static_cast<const uint16_t*>(p)[i];
    case DType::UInt32: return static_cast<const uint32_t*>(p)[i];
    case DType::UInt64: return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    default: return static_cast<int64_t>(load_double(p, dtype, i));
  }
}

/// A floating value stored with ATen's casts (to integers: truncation toward
/// zero, saturated here so an out-of-range value is defined; to bool: != 0).
__device__ inline void store_double(void* p, DType dtype, int64_t i, double v) {
  auto clamp = [](double x, double lo, double hi) { return x != x ? 0.0 : (x < lo ? lo : (x > hi ? hi : x)); };
  switch (dtype) {
    case DType::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::Float64: static_cast<double*>(p)[i] = v; break;
    case DType::Float16: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case DType::BFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
    case DType::Bool: static_cast<uint8_t*>(p)[i] = v != 0.0; break;
    case DType::UInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(clamp(v, 0, 255)); break;
    case DType::Int8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(clamp(v, -128, 127)); break;
    case DType::Int16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(clamp(v, -32768, 32767)); break;
    case DType::Int32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(clamp(v, -2147483648.0, 2147483647.0)); break;
    case DType::Int64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(clamp(v, -9.2233720368547758e18, 9.2233720368547748e18)); break;
    case DType::UInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(clamp(v, 0, 65535)); break;
    case DType::UInt32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(clamp(v, 0, 4294967295.0)); break;
    case DType::UInt64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(clamp(v, 0, 1.8446744073709550e19)); break;
    default: break;
  }
}

__device__ inline void store_int(void* p, DType dtype, int64_t i, int64_t v) {
  switch (dtype) {
    case DType::Bool: static_cast<uint8_t*>(p)[i] = v != 0; break;
    case DType::UInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::Int8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DType::Int16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DType::Int32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::Int64: static_cast<int64_t*>(p)[i] = v; break;
    case DType::UInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DType::UInt32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case DType::UInt64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    default: store_double(p, dtype, i, static_cast<double>(v)); break;
  }
}

/// True for the dtypes load/store handle (not complex, not float8).
__host__ __device__ inline bool is_integral_dtype(DType d) {
  return d == DType::Bool || d == DType::UInt8 || d == DType::Int8 || d == DType::Int16 || d == DType::Int32 ||
         d == DType::Int64 || d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt64;
}
__host__ __device__ inline bool is_floating_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

}  // namespace kiln::cudadev
