#include "devices/cuda/kernels/elementwise_kernel.h"

#include <thrust/complex.h>

#include "core/integer_pow.h"
#include "devices/cuda/cuda_check.h"
#include "shims/common/gcd_value.h"

namespace kiln::cudadev {

namespace {

constexpr int kThreads = 256;
using Complex = thrust::complex<double>;

__device__ bool is_unsigned(DType d) {
  return d == DType::UInt8 || d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt64;
}

// Two's-complement arithmetic that wraps like the narrow integer dtypes do
// (signed overflow is undefined in C++; unsigned wraps).
__device__ int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// gcd in the result's dtype (shims/common/gcd_value.h).
__device__ int64_t gcd_in(DType dtype, int64_t x, int64_t y) {
  switch (dtype) {
    case DType::UInt8: return aoti::gcd_value(static_cast<uint8_t>(x), static_cast<uint8_t>(y));
    case DType::Int8: return aoti::gcd_value(static_cast<int8_t>(x), static_cast<int8_t>(y));
    case DType::Int16: return aoti::gcd_value(static_cast<int16_t>(x), static_cast<int16_t>(y));
    case DType::Int32: return aoti::gcd_value(static_cast<int32_t>(x), static_cast<int32_t>(y));
    default: return aoti::gcd_value(static_cast<int64_t>(x), static_cast<int64_t>(y));
  }
}

__device__ int64_t load_int_at(const ElementwiseOperand& o, int64_t k) {
  if (o.data == nullptr) return static_cast<int64_t>(o.re);
  return load_int(o.data, o.dtype, o.index.offset(k));
}

__device__ double load_double_at(const ElementwiseOperand& o, int64_t k) {
  if (o.data == nullptr) return o.re;
  const int64_t off = o.index.offset(k);
  if (o.dtype == DType::Complex64) return static_cast<const float*>(o.data)[2 * off];
  if (o.dtype == DType::Complex128) return static_cast<const double*>(o.data)[2 * off];
  return load_double(o.data, o.dtype, off);
}

__device__ Complex load_complex_at(const ElementwiseOperand& o, int64_t k) {
  if (o.data == nullptr) return Complex(o.re, o.im);
  const int64_t off = o.index.offset(k);
  if (o.dtype == DType::Complex64) {
    const float* p = static_cast<const float*>(o.data) + 2 * off;
    return Complex(p[0], p[1]);
  }
  if (o.dtype == DType::Complex128) {
    const double* p = static_cast<const double*>(o.data) + 2 * off;
    return Complex(p[0], p[1]);
  }
  return Complex(load_double(o.data, o.dtype, off), 0.0);
}

// A complex result to a real dtype keeps its real part (ATen's cast).
__device__ void store_complex(void* out, DType dtype, int64_t off, Complex v) {
  if (dtype == DType::Complex64) {
    float* p = static_cast<float*>(out) + 2 * off;
    p[0] = static_cast<float>(v.real());
    p[1] = static_cast<float>(v.imag());
  } else if (dtype == DType::Complex128) {
    double* p = static_cast<double*>(out) + 2 * off;
    p[0] = v.real();
    p[1] = v.imag();
  } else {
    store_double(out, dtype, off, v.real());
  }
}

__device__ void store_real(void* out, DType dtype, int64_t off, double v) {
  if (dtype == DType::Complex64 || dtype == DType::Complex128)
    store_complex(out, dtype, off, Complex(v, 0.0));
  else
    store_double(out, dtype, off, v);
}

__device__ int64_t integer_op(ElementwiseOp op, const ElementwiseOperand& a, const ElementwiseOperand& b,
                              int64_t k, double alpha) {
  const int64_t x = load_int_at(a, k);
  switch (op) {
    case ElementwiseOp::Add: return wrap_add(x, wrapping_mul(load_int_at(b, k), static_cast<int64_t>(alpha)));
    case ElementwiseOp::Mul: return wrapping_mul(x, load_int_at(b, k));
    case ElementwiseOp::Pow: return integer_pow(x, load_int_at(b, k));
    case ElementwiseOp::Abs:
      return is_unsigned(a.dtype) || x >= 0 ? x : static_cast<int64_t>(0 - static_cast<uint64_t>(x));
    default: return x;  // Fill
  }
}

__device__ double floating_op(ElementwiseOp op, const ElementwiseOperand& a, const ElementwiseOperand& b,
                              int64_t k, double alpha) {
  const double x = load_double_at(a, k);
  switch (op) {
    case ElementwiseOp::Add: {
      const double y = load_double_at(b, k);
      return alpha == 1.0 ? x + y : x + alpha * y;
    }
    case ElementwiseOp::Mul: return x * load_double_at(b, k);
    case ElementwiseOp::Pow: return pow(x, load_double_at(b, k));
    case ElementwiseOp::Abs: return fabs(x);
    case ElementwiseOp::Angle: return isnan(x) ? x : (x < 0 ? 3.14159265358979323846 : 0.0);
    default: return x;  // Fill
  }
}

__device__ Complex complex_op(ElementwiseOp op, const ElementwiseOperand& a, const ElementwiseOperand& b, int64_t k,
                              double alpha) {
  const Complex x = load_complex_at(a, k);
  switch (op) {
    case ElementwiseOp::Add: {
      const Complex y = load_complex_at(b, k);
      return alpha == 1.0 ? x + y : x + alpha * y;
    }
    case ElementwiseOp::Mul: return x * load_complex_at(b, k);
    case ElementwiseOp::Pow: {
      const Complex y = load_complex_at(b, k);
      if (y == Complex(2.0, 0.0)) return x * x;  // exact for squares, as ATen's fast path
      return thrust::pow(x, y);
    }
    case ElementwiseOp::Abs: return Complex(thrust::abs(x), 0.0);
    case ElementwiseOp::Angle: return Complex(thrust::arg(x), 0.0);
    default: return x;  // Fill
  }
}

__global__ void elementwise_kernel(ElementwiseOp op, ComputeClass compute, ElementwiseOperand a,
                                   ElementwiseOperand b, void* out, DType out_dtype, StridedIndexer out_index,
                                   int64_t numel, double alpha) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < numel;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t off = out_index.offset(k);
    if (op == ElementwiseOp::Gcd) {
      store_int(out, out_dtype, off, gcd_in(out_dtype, load_int_at(a, k), load_int_at(b, k)));
    } else if (op == ElementwiseOp::Polar) {
      const double r = load_double_at(a, k), theta = load_double_at(b, k);
      store_complex(out, out_dtype, off, Complex(r * cos(theta), r * sin(theta)));
    } else if (compute == ComputeClass::Integer) {
      store_int(out, out_dtype, off, integer_op(op, a, b, k, alpha));
    } else if (compute == ComputeClass::Floating) {
      store_real(out, out_dtype, off, floating_op(op, a, b, k, alpha));
    } else {
      store_complex(out, out_dtype, off, complex_op(op, a, b, k, alpha));
    }
  }
}

}  // namespace

Error launch_elementwise(ElementwiseOp op, ComputeClass compute, const ElementwiseOperand& a,
                         const ElementwiseOperand& b, void* out, DType out_dtype, const StridedIndexer& out_index,
                         int64_t numel, double alpha, cudaStream_t stream) {
  if (numel == 0) return Error::Ok;
  const int64_t blocks = (numel + kThreads - 1) / kThreads;
  elementwise_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
      op, compute, a, b, out, out_dtype, out_index, numel, alpha);
  return cuda_status(cudaGetLastError(), "launching the elementwise kernel");
}

}  // namespace kiln::cudadev
