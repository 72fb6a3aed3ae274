// Argument checks of Kiln's op kiln::int4_linear (aoti_torch_<device>_int4_linear),
// shared so every device refuses the same inputs with the same messages:
// x [..., K] float32/bfloat16/float16; qweight uint8 [N, K/2], two 4-bit codes
// a byte; scale_zero [N, K/group_size, 2] of a float dtype (independent of
// x's); group_size > 0 dividing K, K even. Sizes and dtypes only: the devices
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

struct Int4LinearPlan {
  int64_t rows = 0;   ///< x's rows: numel / K (1 for a 1-d x)
  int64_t k = 0;
  int64_t n = 0;
  int64_t groups = 0;  ///< K / group_size
  std::vector<int64_t> out_sizes;  ///< x's sizes with the last one N
};

namespace int4_linear_detail {
inline bool is_float(DType dt) { return dt == DType::Float32 || dt == DType::BFloat16 || dt == DType::Float16; }
}  // namespace int4_linear_detail

/// The checked plan, or an error naming the argument and what it expected
/// (NotSupported for an x dtype the op has no kernel for).
inline Result<Int4LinearPlan> int4_linear_plan(DType x_dtype, std::span<const int64_t> x, DType qweight_dtype,
                                               std::span<const int64_t> qweight, DType scale_zero_dtype,
                                               std::span<const int64_t> scale_zero, int64_t group_size) {
  if (!int4_linear_detail::is_float(x_dtype))
    return set_error(Error::NotSupported, std::string("int4_linear: argument 'x' has dtype ") +
                                              dtype_name(x_dtype) + ", expected float32, bfloat16 or float16");
  if (x.empty()) return invalid("int4_linear: argument 'x' must have at least 1 dimension [..., K], got a scalar");
  if (qweight_dtype != DType::UInt8)
    return invalid(std::string("int4_linear: argument 'qweight' has dtype ") + dtype_name(qweight_dtype) +
                   ", expected uint8 (two 4-bit codes a byte)");
  if (!int4_linear_detail::is_float(scale_zero_dtype))
    return invalid(std::string("int4_linear: argument 'scale_zero' has dtype ") + dtype_name(scale_zero_dtype) +
                   ", expected float32, bfloat16 or float16");
  const int64_t k = x.back();
  if (k % 2 != 0)
    return invalid("int4_linear: argument 'x' has K = " + std::to_string(k) + " (its last size, shape " +
                   shape_string(x) + "), expected an even K: qweight holds two 4-bit codes a byte");
  if (group_size <= 0)
    return invalid("int4_linear: argument 'group_size' is " + std::to_string(group_size) + ", expected > 0");
  if (k % group_size != 0)
    return invalid("int4_linear: argument 'group_size' is " + std::to_string(group_size) +
                   ", which does not divide K = " + std::to_string(k));
  if (qweight.size() != 2 || qweight[1] != k / 2)
    return invalid("int4_linear: argument 'qweight' has shape " + shape_string(qweight) + ", expected [N, " +
                   std::to_string(k / 2) + "] (K / 2 bytes a row for K = " + std::to_string(k) + ")");
  const int64_t n = qweight[0], groups = k / group_size;
  if (scale_zero.size() != 3 || scale_zero[0] != n || scale_zero[1] != groups || scale_zero[2] != 2)
    return invalid("int4_linear: argument 'scale_zero' has shape " + shape_string(scale_zero) + ", expected [" +
                   std::to_string(n) + ", " + std::to_string(groups) + ", 2] ([N, K / group_size, 2] for N = " +
                   std::to_string(n) + ", K = " + std::to_string(k) + ", group_size = " +
                   std::to_string(group_size) + ")");
  Int4LinearPlan plan;
  plan.k = k;
  plan.n = n;
  plan.groups = groups;
  LinearRows rows = linear_rows(x, n);
  plan.rows = rows.rows;
  plan.out_sizes = std::move(rows.out_sizes);
  return plan;
}

}  // namespace kiln::aoti
