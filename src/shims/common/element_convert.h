// Element-wise dtype conversion for host memory, used by copy_, item_* and
// scalar_to_tensor_*. Follows ATen's casting: float -> integer truncates toward
// zero, anything -> bool is "!= 0", bool -> number is 0/1. float8 dtypes are
// only copied to and from themselves (no conversion tables in Kiln yet).
#pragma once

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

/// A host element read as a number. Integers keep full 64-bit precision.
struct Scalar {
  bool is_float = false;
  double f = 0.0;
  int64_t i = 0;  // uint64 values above INT64_MAX are stored by bit pattern
  bool is_unsigned = false;
};

/// True if conversions to and from `dtype` are implemented.
bool convertible(DType dtype) noexcept;

/// Reads the element at `p` (host memory) of type `dtype`. `dtype` must be convertible.
Scalar load_scalar(const void* p, DType dtype) noexcept;

/// Writes `value` converted to `dtype` at `p` (host memory). `dtype` must be convertible.
void store_scalar(void* p, DType dtype, const Scalar& value) noexcept;

/// dst[...] = src[...] converted; both on the CPU with equal sizes, any strides.
Error convert_copy_host(const Tensor& dst, const Tensor& src);

}  // namespace kiln::aoti
