// aten::_cdist_forward's and aten::_pdist_forward's arguments checked, and
// their results planned, as every device's aoti_torch_<device>_<op> does:
// float32/float64 (ATen's distance kernels dispatch on no other dtype), a
// non-negative p, cdist's compute_mode and shapes (batch dims broadcast, the
// same number of columns), pdist's 2-d input. The planned Euclidean path is
// ATen's: through a matrix product (|a|^2 + |b|^2 - 2 a.b, clamped at 0) when
// p = 2, there are columns, and compute_mode is 1, or is unset (0) and either
// side has more than 25 rows; otherwise every distance is summed directly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "shims/common/op_util.h"

namespace kiln::aoti {

inline Error dist_dtype_arg(DType dtype, const char* name) {
  if (dtype == DType::Float32 || dtype == DType::Float64) return Error::Ok;
  return set_error(Error::NotSupported, std::string("argument '") + name + "' has dtype " + dtype_name(dtype) +
                                            ", expected float32 or float64");
}

inline Error dist_p_arg(double p) {
  if (!(p >= 0)) return invalid("argument 'p' is " + std::to_string(p) + ", expected a non-negative value");
  return Error::Ok;
}

struct CdistPlan {
  std::vector<int64_t> batch;      ///< the broadcast batch shape
  int64_t batches = 1;             ///< its element count
  int64_t rows1 = 0, rows2 = 0, cols = 0;
  std::vector<int64_t> x1_sizes;   ///< batch + (rows1, cols): x1 broadcast to it
  std::vector<int64_t> x2_sizes;   ///< batch + (rows2, cols)
  std::vector<int64_t> out_sizes;  ///< batch + (rows1, rows2)
  bool by_product = false;         ///< the Euclidean distance through a matrix product
};

inline Result<CdistPlan> cdist_plan(std::span<const int64_t> a, DType a_dtype, std::span<const int64_t> b,
                                    DType b_dtype, double p, const int64_t* compute_mode) {
  KILN_RETURN_IF_ERROR(dist_dtype_arg(a_dtype, "x1"));
  if (b_dtype != a_dtype)
    return invalid(std::string("argument 'x2' has dtype ") + dtype_name(b_dtype) + ", expected " +
                   dtype_name(a_dtype));
  KILN_RETURN_IF_ERROR(dist_p_arg(p));
  if (compute_mode && (*compute_mode < 0 || *compute_mode > 2))
    return invalid("argument 'compute_mode' is " + std::to_string(*compute_mode) + ", expected 0, 1 or 2");
  if (a.size() < 2) return invalid("argument 'x1' must be at least 2-d, got shape " + shape_string(a));
  if (b.size() < 2) return invalid("argument 'x2' must be at least 2-d, got shape " + shape_string(b));
  CdistPlan plan;
  plan.cols = a.back();
  if (b.back() != plan.cols)
    return invalid("arguments 'x1' " + shape_string(a) + " and 'x2' " + shape_string(b) +
                   " must have the same number of columns");
  plan.rows1 = a[a.size() - 2];
  plan.rows2 = b[b.size() - 2];
  const auto nb1 = static_cast<int64_t>(a.size()) - 2, nb2 = static_cast<int64_t>(b.size()) - 2;
  const int64_t nb = std::max(nb1, nb2);
  plan.batch.resize(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t s1 = i - (nb - nb1) >= 0 ? a[static_cast<size_t>(i - (nb - nb1))] : 1;
    const int64_t s2 = i - (nb - nb2) >= 0 ? b[static_cast<size_t>(i - (nb - nb2))] : 1;
    if (s1 != s2 && s1 != 1 && s2 != 1)
      return invalid("batch dims of 'x1' " + shape_string(a) + " and 'x2' " + shape_string(b) + " do not broadcast");
    plan.batch[static_cast<size_t>(i)] = s1 == 1 ? s2 : s1;
  }
  for (int64_t s : plan.batch) plan.batches *= s;
  plan.x1_sizes = plan.batch;
  plan.x2_sizes = plan.batch;
  plan.out_sizes = plan.batch;
  plan.x1_sizes.insert(plan.x1_sizes.end(), {plan.rows1, plan.cols});
  plan.x2_sizes.insert(plan.x2_sizes.end(), {plan.rows2, plan.cols});
  plan.out_sizes.insert(plan.out_sizes.end(), {plan.rows1, plan.rows2});
  const int64_t mode = compute_mode ? *compute_mode : 0;
  plan.by_product = p == 2 && plan.cols > 0 && (mode == 1 || (mode == 0 && (plan.rows1 > 25 || plan.rows2 > 25)));
  return plan;
}

/// The number of pairs pdist gives for `sizes` after checking its arguments.
inline Result<int64_t> pdist_pairs(std::span<const int64_t> sizes, DType dtype, double p) {
  KILN_RETURN_IF_ERROR(dist_dtype_arg(dtype, "self"));
  KILN_RETURN_IF_ERROR(dist_p_arg(p));
  if (sizes.size() != 2) return invalid("argument 'self' must be 2-d, got shape " + shape_string(sizes));
  const int64_t n = sizes[0];
  return n < 2 ? int64_t{0} : n * (n - 1) / 2;
}

}  // namespace kiln::aoti
