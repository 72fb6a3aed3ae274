// aten::_fused_rms_norm's arguments checked as every device's
// aoti_torch_<device>__fused_rms_norm checks them, and the geometry and
// dtypes both devices' ATen kernels give: the input floating, normalized_shape
// its trailing shape, weight (optional) of that shape and floating; the
// statistics (rstd) in the compute type (float32 for narrow floats, float64
// for float64) with the input's shape, the normalized dims kept as 1; eps
// defaulting to that compute type's machine epsilon.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype_promotion.h"
#include "kiln/dtype.h"
#include "shims/common/op_util.h"

namespace kiln::aoti {

struct RmsNormPlan {
  DType acc = DType::Float32;      ///< rstd's dtype, the compute type
  double eps = 0.0;
  int64_t rows = 0;                ///< product of the leading (unnormalized) sizes
  int64_t inner = 1;               ///< product of normalized_shape
  std::vector<int64_t> rstd_sizes;
};

/// The checked plan, or an error naming the argument (NotSupported for a
/// non-floating input). `weight_sizes`/`weight_dtype` are null without weight.
inline Result<RmsNormPlan> rms_norm_plan(std::span<const int64_t> input_sizes, DType input_dtype,
                                         std::span<const int64_t> shape, const std::vector<int64_t>* weight_sizes,
                                         const DType* weight_dtype, const double* eps) {
  if (!is_floating_class(input_dtype))
    return set_error(Error::NotSupported, std::string("argument 'input' has dtype ") + dtype_name(input_dtype) +
                                              ", expected a floating dtype");
  const auto rank = static_cast<int64_t>(input_sizes.size());
  const auto k = static_cast<int64_t>(shape.size());
  bool matches = k >= 1 && k <= rank;
  for (int64_t i = 0; matches && i < k; ++i)
    matches = input_sizes[static_cast<size_t>(rank - k + i)] == shape[static_cast<size_t>(i)];
  if (!matches)
    return invalid("argument 'normalized_shape' " + shape_string(shape) + " is not the trailing shape of input " +
                   shape_string(input_sizes));
  if (weight_sizes != nullptr && *weight_sizes != std::vector<int64_t>(shape.begin(), shape.end()))
    return invalid("argument 'weight' has shape " + shape_string(*weight_sizes) + ", expected " +
                   shape_string(shape));
  if (weight_dtype != nullptr && !is_floating_class(*weight_dtype))
    return invalid(std::string("argument 'weight' has dtype ") + dtype_name(*weight_dtype));
  RmsNormPlan plan;
  plan.acc = input_dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  plan.eps = eps ? *eps
                 : (plan.acc == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                               : static_cast<double>(std::numeric_limits<float>::epsilon()));
  plan.rstd_sizes.assign(input_sizes.begin(), input_sizes.end());
  for (int64_t i = 0; i < k; ++i) {
    plan.inner *= shape[static_cast<size_t>(i)];
    plan.rstd_sizes[static_cast<size_t>(rank - k + i)] = 1;
  }
  plan.rows = 1;
  for (int64_t i = 0; i < rank - k; ++i) plan.rows *= input_sizes[static_cast<size_t>(i)];
  return plan;
}

}  // namespace kiln::aoti
