// The arguments of scatter (src and value), scatter_reduce.two and
// index_reduce checked as both devices check them (dtypes, ranks, shapes, the
// reduction and which dtypes it takes), before either reads the index values,
// which differ in where they live (host or device). The messages are the ones
// the CPU ops have always given, so a model's error does not depend on its
// device.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "shims/common/op_util.h"
#include "shims/common/scalar_range.h"

namespace kiln::aoti {

enum class Reduction { Replace, Sum, Prod, Mean, Max, Min };

/// A tensor argument as the checks see it.
struct ScatterOperand {
  DType dtype;
  std::span<const int64_t> sizes;
};

/// Sizes with a 0-d tensor seen as 1-d of one element (ATen's
/// ensure_nonempty_size for scatter/gather-like ops).
inline std::vector<int64_t> nonempty_sizes(std::span<const int64_t> sizes) {
  return sizes.empty() ? std::vector<int64_t>{1} : std::vector<int64_t>(sizes.begin(), sizes.end());
}

/// `reduce` (ATen's names; "max"/"min" are accepted as ATen accepts them) or
/// an error; `allow_sum` is false for index_reduce, which has no sum.
inline Result<Reduction> reduction_arg(const char* reduce, bool allow_sum, const char* fn) {
  const std::string r = reduce == nullptr ? "" : reduce;
  if (r == "sum" && allow_sum) return Reduction::Sum;
  if (r == "prod") return Reduction::Prod;
  if (r == "mean") return Reduction::Mean;
  if (r == "amax" || (allow_sum && r == "max")) return Reduction::Max;
  if (r == "amin" || (allow_sum && r == "min")) return Reduction::Min;
  return invalid(std::string("argument 'reduce' is '") + r + "', expected " +
                 (allow_sum ? "sum, prod, mean, amax or amin" : "prod, mean, amax or amin") + " for " + fn);
}

/// Error when `dtype` cannot take reduction `r` on any device: bool has no
/// mean, complex no amax/amin.
inline Error reduction_dtype_check(Reduction r, DType dtype) {
  if (r == Reduction::Mean && dtype == DType::Bool) return invalid("reduce 'mean' is not supported for bool");
  if ((r == Reduction::Max || r == Reduction::Min) &&
      (dtype == DType::Complex64 || dtype == DType::Complex128))
    return invalid(std::string("reduce 'amax'/'amin' is not supported for ") + dtype_name(dtype));
  return Error::Ok;
}

/// scatter.value's Scalar converted to `dtype` as ATen converts it: refused
/// when it overflows the dtype.
inline Error scatter_value_check(double value, DType dtype) {
  if (!scalar_fits(value, dtype))
    return invalid("argument 'value' (" + std::to_string(value) + ") cannot be converted to " + dtype_name(dtype) +
                   " without overflow");
  return Error::Ok;
}

/// What the scatter checks found.
struct ScatterArgs {
  int64_t dim = 0;                       ///< wrapped
  Reduction reduce = Reduction::Replace;  ///< Replace for plain scatter
  bool empty_index = false;              ///< nothing to scatter: out = self
};

/// scatter.src_out (src given, reduce null), scatter.value_out (src null,
/// reduce null) and scatter_reduce.two_out (reduce given): out has self's
/// dtype and shape, src self's dtype; index is int64/int32 with self's
/// number of dimensions (a 0-d tensor counting as 1-d), no larger than self
/// apart from `dim` and no larger than src.
inline Result<ScatterArgs> scatter_args(ScatterOperand out, ScatterOperand self, int64_t dim, ScatterOperand index,
                                        const ScatterOperand* src, const char* reduce) {
  const auto same = [](ScatterOperand t, DType dtype, const char* name) -> Error {
    if (t.dtype != dtype)
      return invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype) + ", expected " +
                     dtype_name(dtype));
    return Error::Ok;
  };
  if (src) KILN_RETURN_IF_ERROR(same(*src, self.dtype, "src"));
  KILN_RETURN_IF_ERROR(same(out, self.dtype, "out"));
  if (!std::equal(out.sizes.begin(), out.sizes.end(), self.sizes.begin(), self.sizes.end()))
    return invalid("argument 'out' has shape " + shape_string(out.sizes) + ", expected " + shape_string(self.sizes));
  ScatterArgs a;
  KILN_ASSIGN_OR_RETURN(a.dim, wrap_dim(dim, static_cast<int64_t>(self.sizes.size())));
  if (reduce != nullptr) {
    KILN_ASSIGN_OR_RETURN(a.reduce, reduction_arg(reduce, true, "scatter_reduce"));
    KILN_RETURN_IF_ERROR(reduction_dtype_check(a.reduce, self.dtype));
  }
  KILN_RETURN_IF_ERROR(index_dtype_check(index.dtype, "index"));
  int64_t numel = 1;
  for (int64_t s : index.sizes) numel *= s;
  if (numel == 0) {
    a.empty_index = true;
    return a;
  }
  const std::vector<int64_t> ss = nonempty_sizes(self.sizes), is = nonempty_sizes(index.sizes);
  const std::vector<int64_t> sr = src ? nonempty_sizes(src->sizes) : is;
  if (is.size() != ss.size())
    return invalid("argument 'index' has " + std::to_string(index.sizes.size()) +
                   " dimensions, expected the same number as self (" + std::to_string(self.sizes.size()) + ")");
  if (src && sr.size() != is.size())
    return invalid("argument 'src' has " + std::to_string(src->sizes.size()) +
                   " dimensions, expected the same number as index (" + std::to_string(index.sizes.size()) + ")");
  for (size_t d = 0; d < is.size(); ++d)
    if ((static_cast<int64_t>(d) != a.dim && is[d] > ss[d]) || is[d] > sr[d])
      return invalid("argument 'index' of shape " + shape_string(index.sizes) + " must be no larger than self " +
                     shape_string(self.sizes) + " apart from dimension " + std::to_string(a.dim) +
                     " and no larger than src " + shape_string(src ? src->sizes : index.sizes));
  return a;
}

/// What the index_reduce checks found.
struct IndexReduceArgs {
  int64_t dim = 0;  ///< wrapped
  Reduction reduce = Reduction::Prod;
  int64_t count = 0;  ///< index's elements = source.size(dim)
};

/// index_reduce: reduce is prod, mean, amax or amin; source has self's dtype
/// and shape apart from `dim`, where it has one slice per index value; index
/// is an int64/int32 vector (or scalar).
inline Result<IndexReduceArgs> index_reduce_args(ScatterOperand self, int64_t dim, ScatterOperand index,
                                                 ScatterOperand source, const char* reduce) {
  IndexReduceArgs a;
  KILN_ASSIGN_OR_RETURN(a.reduce, reduction_arg(reduce, false, "index_reduce"));
  KILN_RETURN_IF_ERROR(reduction_dtype_check(a.reduce, self.dtype));
  if (source.dtype != self.dtype)
    return invalid(std::string("argument 'source' has dtype ") + dtype_name(source.dtype) + ", expected " +
                   dtype_name(self.dtype));
  KILN_RETURN_IF_ERROR(index_dtype_check(index.dtype, "index"));
  if (index.sizes.size() > 1)
    return invalid("argument 'index' has shape " + shape_string(index.sizes) + ", expected a vector");
  KILN_ASSIGN_OR_RETURN(a.dim, wrap_dim(dim, static_cast<int64_t>(self.sizes.size())));
  const std::vector<int64_t> ss = nonempty_sizes(self.sizes), sr = nonempty_sizes(source.sizes);
  bool shape_ok = ss.size() == sr.size();
  for (size_t j = 0; shape_ok && j < ss.size(); ++j) shape_ok = static_cast<int64_t>(j) == a.dim || ss[j] == sr[j];
  if (!shape_ok)
    return invalid("argument 'source' of shape " + shape_string(source.sizes) + " must match self's shape " +
                   shape_string(self.sizes) + " except in dimension " + std::to_string(a.dim));
  a.count = 1;
  for (int64_t s : index.sizes) a.count *= s;
  const int64_t slices = sr[static_cast<size_t>(a.dim)];
  if (slices != a.count)
    return invalid("argument 'index' has " + std::to_string(a.count) + " elements, but source.size(" +
                   std::to_string(a.dim) + ") is " + std::to_string(slices));
  return a;
}

}  // namespace kiln::aoti
