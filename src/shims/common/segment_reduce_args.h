// segment_reduce's arguments, checked as every device checks them: the
// reduction, which of lengths/offsets describes the segments (offsets when
// both are given, as ATen), their dtype and shape against data's, and the
// segment bounds their values give, with the messages the ops report. The
// devices differ only in where the values are read and how they reduce.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shims/common/op_util.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti::segment {

enum class Reduce { Sum, Mean, Max, Min, Prod };

/// The `reduce` argument: sum, mean, max, min or prod.
inline Result<Reduce> reduce_arg(const char* reduce) {
  const std::string r = reduce == nullptr ? "" : reduce;
  if (r == "sum") return Reduce::Sum;
  if (r == "mean") return Reduce::Mean;
  if (r == "max") return Reduce::Max;
  if (r == "min") return Reduce::Min;
  if (r == "prod") return Reduce::Prod;
  return invalid("argument 'reduce' is '" + r + "', expected sum, mean, max, min or prod");
}

/// One optional tensor argument as the checks see it.
struct TensorShape {
  bool given = false;
  DType dtype = DType::Int64;
  std::span<const int64_t> sizes;
};

/// The segments of a call: data split into outer x width x inner around
/// `axis`, `segments` per outer row, and the result's sizes.
struct Plan {
  Reduce reduce = Reduce::Sum;
  bool by_lengths = true;           ///< lengths describe the segments (else offsets)
  const char* seg_name = "lengths";  ///< the argument that describes them
  int64_t axis = 0;
  int64_t segments = 0;
  int64_t outer = 1;
  int64_t width = 0;
  int64_t inner = 1;
  std::vector<int64_t> out_sizes;
};

/// Checks data (floating: float32/float64/float16/bfloat16), the reduction,
/// the segment arguments (offsets win when both lengths and offsets are given;
/// indices is refused whenever given, as in ATen) and the axis.
inline Result<Plan> plan(DType data_dtype, std::span<const int64_t> data_sizes, const char* reduce,
                         const TensorShape& lengths, bool indices_given, const TensorShape& offsets, int64_t axis) {
  Plan p;
  KILN_ASSIGN_OR_RETURN(p.reduce, reduce_arg(reduce));
  if (data_dtype != DType::Float32 && data_dtype != DType::Float64 && data_dtype != DType::Float16 &&
      data_dtype != DType::BFloat16)
    return invalid(std::string("argument 'data' has dtype ") + dtype_name(data_dtype) +
                   ", expected a floating dtype");
  if (indices_given) return invalid("argument 'indices': indices based reduction is not supported");
  if (!lengths.given && !offsets.given) return invalid("either 'lengths' or 'offsets' must be given");
  const TensorShape& seg = offsets.given ? offsets : lengths;
  p.by_lengths = !offsets.given;
  p.seg_name = p.by_lengths ? "lengths" : "offsets";
  KILN_RETURN_IF_ERROR(index_dtype_check(seg.dtype, p.seg_name));
  const int64_t rank = static_cast<int64_t>(data_sizes.size());
  if (rank == 0) return invalid("argument 'data' is 0-d, expected at least one dimension");
  KILN_ASSIGN_OR_RETURN(p.axis, wrap_dim(axis, rank, "axis"));
  const int64_t ax = p.axis;
  if (static_cast<int64_t>(seg.sizes.size()) != ax + 1)
    return invalid(std::string("argument 'axis' is ") + std::to_string(axis) + ", expected the last dimension of '" +
                   p.seg_name + "' (shape " + shape_string(seg.sizes) + ")");
  for (int64_t j = 0; j < ax; ++j)
    if (seg.sizes[static_cast<size_t>(j)] != data_sizes[static_cast<size_t>(j)])
      return invalid(std::string("argument '") + p.seg_name + "' has shape " + shape_string(seg.sizes) +
                     ", expected data's sizes " + shape_string(data_sizes) + " before axis " + std::to_string(ax));
  const int64_t along = seg.sizes[static_cast<size_t>(ax)];
  p.segments = p.by_lengths ? along : along - 1;
  if (p.segments < 0) return invalid("argument 'offsets' is empty along axis, expected at least one offset");
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t s = data_sizes[static_cast<size_t>(d)];
    if (d < ax) p.outer *= s;
    else if (d == ax) p.width = s;
    else p.inner *= s;
  }
  p.out_sizes.assign(data_sizes.begin(), data_sizes.end());
  p.out_sizes[static_cast<size_t>(ax)] = p.segments;
  return p;
}

/// `initial` (may be null) as ATen's Scalar::to<T> takes it for data of
/// `dtype`: a finite value outside the dtype's range is an error.
inline Error initial_fits(const double* initial, DType dtype) {
  if (initial == nullptr) return Error::Ok;
  const double v = *initial;
  double max = 1.7976931348623157e308;
  if (dtype == DType::Float32) max = 3.4028234663852886e38;
  else if (dtype == DType::Float16) max = 65504.0;
  else if (dtype == DType::BFloat16) max = 3.3895313892515355e38;
  if (std::isfinite(v) && (v > max || v < -max))
    return invalid("argument 'initial' is " + std::to_string(v) + ", which " + dtype_name(dtype) + " cannot hold");
  return Error::Ok;
}

/// The bounds of every segment from the values of the segment argument
/// (row-major, `p.outer` rows of `p.segments` lengths or `p.segments + 1`
/// offsets): starts[o * (segments + 1) + s] begins segment s of row o, which
/// ends where segment s + 1 begins. Lengths must be non-negative and not sum
/// past data.size(axis); offsets non-decreasing within [0, data.size(axis)];
/// unless `unsafe`, the segments must cover data.size(axis) exactly.
inline Result<std::vector<int64_t>> segment_starts(const Plan& p, std::span<const int64_t> values, bool unsafe) {
  const int64_t segments = p.segments, width = p.width;
  std::vector<int64_t> starts(static_cast<size_t>(p.outer * (segments + 1)));
  for (int64_t o = 0; o < p.outer; ++o) {
    int64_t* st = &starts[static_cast<size_t>(o * (segments + 1))];
    if (p.by_lengths) {
      st[0] = 0;
      for (int64_t s = 0; s < segments; ++s) {
        const int64_t len = values[static_cast<size_t>(o * segments + s)];
        if (len < 0) return invalid("argument 'lengths' contains a negative value " + std::to_string(len));
        if (len > width - st[s])
          return invalid("argument 'lengths' sums past data.size(" + std::to_string(p.axis) + ") = " +
                         std::to_string(width));
        st[s + 1] = st[s] + len;
      }
    } else {
      for (int64_t s = 0; s <= segments; ++s) {
        st[s] = values[static_cast<size_t>(o * (segments + 1) + s)];
        if (st[s] < 0 || st[s] > width || (s > 0 && st[s] < st[s - 1]))
          return invalid("argument 'offsets' has value " + std::to_string(st[s]) +
                         ", expected non-decreasing offsets in [0, " + std::to_string(width) + "]");
      }
    }
    if (!unsafe && (st[0] != 0 || st[segments] != width))
      return invalid(std::string("argument '") + p.seg_name + "': segments must cover data.size(" +
                     std::to_string(p.axis) + ") = " + std::to_string(width) + " exactly unless unsafe");
  }
  return starts;
}

}  // namespace kiln::aoti::segment
