// ATen's type promotion, for every device's fallback ops: the dtype classes
// (bool < integral < floating < complex), torch.promote_types over two dtypes,
// and torch.result_type over an op's operands (tensors with dimensions, then
// 0-d tensors, then wrapped Python scalars, each class deciding the dtype only
// where a higher class does not).
#pragma once

#include <optional>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/tensor.h"

namespace kiln {

/// The dtype class: 0 bool, 1 integral, 2 floating, 3 complex; -1 for dtypes
/// ops never compute on (float8).
KILN_API int dtype_class(DType dtype) noexcept;
inline bool is_integral_class(DType d) noexcept { return dtype_class(d) == 0 || dtype_class(d) == 1; }
inline bool is_floating_class(DType d) noexcept { return dtype_class(d) == 2; }
inline bool is_complex_class(DType d) noexcept { return dtype_class(d) == 3; }

/// torch.promote_types(a, b).
KILN_API DType promote_types(DType a, DType b) noexcept;

/// torch.result_type over tensors and double scalars (a Scalar crosses the C
/// ABI as a double, so it is always a floating wrapped number).
class KILN_API ResultType {
 public:
  /// A tensor operand of `dtype` with `dim` dimensions.
  void add_tensor(DType dtype, int64_t dim) noexcept;
  void add_tensor(const Tensor& t) noexcept { add_tensor(t.dtype(), t.dim()); }
  /// A wrapped double counts as the default dtype (float32).
  void add_double_scalar() noexcept;
  /// The result dtype, or an error when it would be a dtype Kiln lacks
  /// (complex32, from a float16 tensor with a 0-d complex one).
  Result<DType> dtype() const;

 private:
  std::optional<DType> dim_, zero_dim_, wrapped_;
};

}  // namespace kiln
