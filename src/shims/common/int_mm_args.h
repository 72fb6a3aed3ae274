// Argument checks shared by every device's _int_mm_out and
// _weight_int8pack_mm (the int8-quantized products), so the devices refuse
// the same inputs with the same messages. Sizes and dtypes only: the devices
// read their tensors differently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "shims/common/linear_rows.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti {

namespace int_mm_detail {
inline Error expect_dtype(DType got, DType want, const char* name) {
  if (got != want)
    return invalid(std::string("argument '") + name + "' has dtype " + dtype_name(got) + ", expected " +
                   dtype_name(want));
  return Error::Ok;
}
}  // namespace int_mm_detail

/// out (m x n, int32) = self (m x k, int8) @ mat2 (k x n, int8).
inline Error int_mm_args(DType self_dtype, std::span<const int64_t> self, DType mat2_dtype,
                         std::span<const int64_t> mat2, DType out_dtype, std::span<const int64_t> out) {
  if (self.size() != 2 || mat2.size() != 2)
    return invalid("arguments 'self' and 'mat2' must be 2-d, got " + shape_string(self) + ", " + shape_string(mat2));
  if (self[1] != mat2[0])
    return invalid("shape mismatch: self " + shape_string(self) + " @ mat2 " + shape_string(mat2));
  KILN_RETURN_IF_ERROR(int_mm_detail::expect_dtype(self_dtype, DType::Int8, "self"));
  KILN_RETURN_IF_ERROR(int_mm_detail::expect_dtype(mat2_dtype, DType::Int8, "mat2"));
  KILN_RETURN_IF_ERROR(int_mm_detail::expect_dtype(out_dtype, DType::Int32, "out"));
  if (out.size() != 2 || out[0] != self[0] || out[1] != mat2[1])
    return invalid("argument 'out' has shape " + shape_string(out) + ", expected [" + std::to_string(self[0]) + ", " +
                   std::to_string(mat2[1]) + "]");
  return Error::Ok;
}

/// result (m x n, self's dtype) = self (m x k: float32, bfloat16 or float16)
/// @ mat2 (n x k, int8) transposed, times scales (n, self's dtype) per column.
inline Error weight_int8pack_args(DType self_dtype, std::span<const int64_t> self, DType mat2_dtype,
                                  std::span<const int64_t> mat2, DType scales_dtype,
                                  std::span<const int64_t> scales) {
  if (self_dtype != DType::Float32 && self_dtype != DType::BFloat16 && self_dtype != DType::Float16)
    return set_error(Error::NotSupported, std::string("argument 'self' has dtype ") + dtype_name(self_dtype) +
                                              ", expected float32, bfloat16 or float16");
  KILN_RETURN_IF_ERROR(int_mm_detail::expect_dtype(mat2_dtype, DType::Int8, "mat2"));
  KILN_RETURN_IF_ERROR(int_mm_detail::expect_dtype(scales_dtype, self_dtype, "scales"));
  if (self.size() != 2) return invalid("argument 'self' must be 2-d, got shape " + shape_string(self));
  if (mat2.size() != 2) return invalid("argument 'mat2' must be 2-d, got shape " + shape_string(mat2));
  const int64_t k = self[1], n = mat2[0];
  if (mat2[1] != k)
    return invalid("argument 'mat2' has shape " + shape_string(mat2) + ", expected [N, " + std::to_string(k) + "]");
  if (scales.size() != 1 || scales[0] != n)
    return invalid("argument 'scales' has shape " + shape_string(scales) + ", expected [" + std::to_string(n) + "]");
  return Error::Ok;
}

/// Kiln's op kiln::int8_linear: x [..., K] (float32, bfloat16 or float16) @
/// W^T with W[n, k] = weight[n, k] (int8) * scales[n, k / group_size] (x's
/// dtype, [N, K / group_size]); sums in float32, each group's scaled. With
/// group_size K it is _weight_int8pack_mm over x's rows.
struct Int8LinearPlan {
  int64_t rows = 0, k = 0, n = 0, groups = 0;
  std::vector<int64_t> out_sizes;  ///< x's sizes with the last one N
};

inline Result<Int8LinearPlan> int8_linear_plan(DType x_dtype, std::span<const int64_t> x, DType weight_dtype,
                                               std::span<const int64_t> weight, DType scales_dtype,
                                               std::span<const int64_t> scales, int64_t group_size) {
  if (x_dtype != DType::Float32 && x_dtype != DType::BFloat16 && x_dtype != DType::Float16)
    return set_error(Error::NotSupported, std::string("int8_linear: argument 'x' has dtype ") + dtype_name(x_dtype) +
                                              ", expected float32, bfloat16 or float16");
  if (x.empty()) return invalid("int8_linear: argument 'x' must have at least 1 dimension [..., K], got a scalar");
  if (weight_dtype != DType::Int8)
    return invalid(std::string("int8_linear: argument 'weight' has dtype ") + dtype_name(weight_dtype) +
                   ", expected int8");
  if (scales_dtype != x_dtype)
    return invalid(std::string("int8_linear: argument 'scales' has dtype ") + dtype_name(scales_dtype) +
                   ", expected x's " + dtype_name(x_dtype));
  const int64_t k = x.back();
  if (weight.size() != 2 || weight[1] != k)
    return invalid("int8_linear: argument 'weight' has shape " + shape_string(weight) + ", expected [N, " +
                   std::to_string(k) + "]");
  if (group_size <= 0 || (k > 0 && k % group_size != 0))
    return invalid("int8_linear: argument 'group_size' is " + std::to_string(group_size) +
                   ", expected a positive divisor of K = " + std::to_string(k));
  const int64_t n = weight[0], groups = k / group_size;
  if (scales.size() != 2 || scales[0] != n || scales[1] != groups)
    return invalid("int8_linear: argument 'scales' has shape " + shape_string(scales) + ", expected [" +
                   std::to_string(n) + ", " + std::to_string(groups) + "] ([N, K / group_size])");
  Int8LinearPlan plan;
  plan.k = k;
  plan.n = n;
  plan.groups = groups;
  LinearRows rows = linear_rows(x, n);
  plan.rows = rows.rows;
  plan.out_sizes = std::move(rows.out_sizes);
  return plan;
}

}  // namespace kiln::aoti
