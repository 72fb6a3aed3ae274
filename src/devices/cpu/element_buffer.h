// Moves CPU tensors of any dtype and strides in and out of contiguous
// row-major buffers of one compute type per kind of dtype: int64_t for
// integers and bool, double for floating dtypes, std::complex<double> for
// complex ones. Ops that are not on a hot path (scans, sorts, indexing,
// pooling, FFT, ...) are written once over these buffers; reading widens, and
// writing converts with ATen's casting (float -> integer truncates toward zero,
// -> bool is "!= 0", narrow floats round to nearest even), so every input
// layout and dtype goes through one tested path.
#pragma once

#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/dtype_promotion.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

using Complex = std::complex<double>;

/// Which compute type a dtype reads as.
enum class ElementKind { Integral, Floating, Complex, Unsupported };

/// Integral (ints, uints, bool), Floating (float16/32/64, bfloat16), Complex
/// (complex64/128); float8 is Unsupported (stored only, never computed on).
ElementKind element_kind(DType dtype) noexcept;
inline bool is_integral(DType d) noexcept { return element_kind(d) == ElementKind::Integral; }
inline bool is_floating(DType d) noexcept { return element_kind(d) == ElementKind::Floating; }
inline bool is_complex(DType d) noexcept { return element_kind(d) == ElementKind::Complex; }

/// One element at `p` (host memory) of `dtype`, as T (int64_t, double or
/// Complex). A complex element read as a real type gives its real part.
template <typename T>
T read_element(const void* p, DType dtype) noexcept;

/// Writes `value` converted to `dtype` at `p`. A complex value written to a
/// real dtype keeps its real part.
template <typename T>
void write_element(void* p, DType dtype, T value) noexcept;

/// The elements of `src` (CPU, any strides) in row-major order as T.
template <typename T>
std::vector<T> read_elements(const Tensor& src);

/// Writes `values` (row-major, dst.numel() of them) into `dst`'s elements.
template <typename T>
void write_elements(const T* values, const Tensor& dst) noexcept;

/// The C++ compute type for a dtype's kind, for visit_kind.
template <ElementKind K>
struct KindType;
template <>
struct KindType<ElementKind::Integral> {
  using type = int64_t;
};
template <>
struct KindType<ElementKind::Floating> {
  using type = double;
};
template <>
struct KindType<ElementKind::Complex> {
  using type = Complex;
};

/// Calls fn(T{}) with T the compute type of `dtype`'s kind and returns its
/// result (an Error); an error naming the dtype when it cannot be computed on.
template <typename Fn>
Error visit_kind(DType dtype, Fn&& fn) {
  switch (element_kind(dtype)) {
    case ElementKind::Integral: return fn(int64_t{});
    case ElementKind::Floating: return fn(double{});
    case ElementKind::Complex: return fn(Complex{});
    default: break;
  }
  return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(dtype) + " is not supported by this op");
}

/// a + b and a * b in a compute type: int64 wraps around as ATen's integer
/// ops do (through uint64: signed overflow is undefined in C++); double and
/// Complex are plain arithmetic.
template <typename T>
T wrap_add(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <typename T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

/// torch.promote_types (core/dtype_promotion.h), shared with the CUDA ops.
using ::kiln::promote_types;

}  // namespace kiln::cpu
