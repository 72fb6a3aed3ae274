#include "core/dtype_promotion.h"

#include <string>

namespace kiln {

namespace {

// The order within a class that promote_types picks the larger of.
int rank_in_class(DType d) noexcept {
  switch (d) {
    case DType::Bool: return 0;
    case DType::UInt8: return 1;
    case DType::Int8: return 2;
    case DType::Int16: return 3;
    case DType::UInt16: return 3;
    case DType::Int32: return 4;
    case DType::UInt32: return 4;
    case DType::Int64: return 5;
    case DType::UInt64: return 5;
    case DType::Float16: return 1;
    case DType::BFloat16: return 1;
    case DType::Float32: return 2;
    case DType::Float64: return 3;
    case DType::Complex64: return 2;
    case DType::Complex128: return 3;
    default: return 0;
  }
}

// ATen's combine_categories: the higher operand class wins unless the lower
// one is of a higher dtype class.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_complex_class(*higher)) return higher;
  if (is_complex_class(*lower)) {
    if (is_floating_class(*higher)) {
      if (*higher == DType::Float64) return DType::Complex128;
      if (*higher == DType::Float32 || *higher == DType::BFloat16) return DType::Complex64;
      return lower;  // float16: complex32 is refused in dtype()
    }
    return lower;
  }
  if (is_floating_class(*higher)) return higher;
  if (*higher == DType::Bool || is_floating_class(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

int dtype_class(DType d) noexcept {
  switch (d) {
    case DType::Bool: return 0;
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::UInt16: case DType::UInt32: case DType::UInt64: return 1;
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64: return 2;
    case DType::Complex64: case DType::Complex128: return 3;
    default: return -1;
  }
}

DType promote_types(DType a, DType b) noexcept {
  if (a == b) return a;
  // Bool ranks with the integers here (bool < uint8 < ...).
  const int ka = dtype_class(a) == 0 ? 1 : dtype_class(a), kb = dtype_class(b) == 0 ? 1 : dtype_class(b);
  if (ka != kb) {
    const DType hi = ka > kb ? a : b, lo = ka > kb ? b : a;
    // complex64 with float64 needs complex128 to keep the float64's precision.
    if (hi == DType::Complex64 && lo == DType::Float64) return DType::Complex128;
    return hi;
  }
  if (ka == 1) {
    if ((a == DType::UInt8 && b == DType::Int8) || (a == DType::Int8 && b == DType::UInt8)) return DType::Int16;
    return rank_in_class(a) >= rank_in_class(b) ? a : b;
  }
  if (ka == 2 && rank_in_class(a) == 1 && rank_in_class(b) == 1) return DType::Float32;  // float16 with bfloat16
  return rank_in_class(a) >= rank_in_class(b) ? a : b;
}

void ResultType::add_tensor(DType dtype, int64_t dim) noexcept {
  auto& slot = dim > 0 ? dim_ : zero_dim_;
  slot = slot ? promote_types(*slot, dtype) : dtype;
}

void ResultType::add_double_scalar() noexcept {
  wrapped_ = wrapped_ ? promote_types(*wrapped_, DType::Float32) : DType::Float32;
}

Result<DType> ResultType::dtype() const {
  std::optional<DType> lower = combine(zero_dim_, wrapped_);
  if (!lower && !dim_) return set_error(Error::InvalidArgument, "no operand to take a result dtype from");
  if (dim_ && lower && !is_complex_class(*dim_) && is_complex_class(*lower) && is_floating_class(*dim_)) {
    // ATen maps bfloat16 to complex64 here (there is no complex bfloat16).
    if (*dim_ == DType::Float32 || *dim_ == DType::BFloat16) return DType::Complex64;
    if (*dim_ == DType::Float64) return DType::Complex128;
    return set_error(Error::InvalidArgument, std::string("the result dtype would be the complex type of ") +
                                                 dtype_name(*dim_) + ", which Kiln does not support");
  }
  return *combine(dim_, lower);
}

}  // namespace kiln
