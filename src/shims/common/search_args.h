// The arguments of searchsorted (Tensor and Scalar) and bucketize checked as
// every device checks them: side against right, the boundaries' rank and
// shape against the values', the sorter's dtype and shape, and the dtype the
// two are compared in. The devices differ in where the data lives (so only
// the CPU range-checks sorter indices up front) and in which devices the
// operands may sit on. The messages are the ones the CPU ops have always
// given, so a model's error does not depend on its device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/dtype_promotion.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti::search {

/// Whether the values go after equal boundaries: `side`, when given, decides,
/// and may not contradict right=True.
inline Result<bool> resolve_right(int32_t right, const char** side) {
  if (side == nullptr || *side == nullptr) return right != 0;
  const std::string s = *side;
  if (s != "left" && s != "right")
    return invalid("argument 'side' is '" + s + "', expected 'left' or 'right'");
  if (s == "left" && right != 0) return invalid("argument 'side' is 'left' while 'right' is true");
  return s == "right";
}

/// searchsorted.Tensor: a 0-d `self` has one line to search, so it needs 1-D
/// boundaries.
inline Error zero_dim_values(std::span<const int64_t> values, std::span<const int64_t> boundaries) {
  if (values.empty() && boundaries.size() > 1)
    return invalid("argument 'self' is 0-d, which needs 1-D 'sorted_sequence', not shape " +
                   shape_string(boundaries));
  return Error::Ok;
}

/// searchsorted.Scalar: one value, so exactly one line of boundaries.
inline Error scalar_values(std::span<const int64_t> boundaries) {
  if (boundaries.size() != 1)
    return invalid("argument 'self' is a Scalar, which needs 1-D 'sorted_sequence', not shape " +
                   shape_string(boundaries));
  return Error::Ok;
}

/// bucketize takes one line of boundaries for all values.
inline Error bucketize_boundaries(std::span<const int64_t> boundaries) {
  if (boundaries.size() != 1)
    return invalid("argument 'boundaries' has shape " + shape_string(boundaries) + ", expected 1-D");
  return Error::Ok;
}

/// Boundaries (argument `name`) have a dimension and are 1-D or share all but
/// their last dimension with the values (`values` is null for a Scalar).
inline Error boundaries_shape(std::span<const int64_t> boundaries, const std::span<const int64_t>* values,
                              const char* name) {
  if (boundaries.empty())
    return invalid(std::string("argument '") + name + "' is 0-d; it must have at least one dimension");
  if (boundaries.size() > 1) {
    bool match = values != nullptr && values->size() == boundaries.size();
    for (size_t d = 0; match && d + 1 < boundaries.size(); ++d) match = boundaries[d] == (*values)[d];
    if (!match)
      return invalid("argument 'sorted_sequence' has shape " + shape_string(boundaries) +
                     ": it must be 1-D or share all but its last dimension with 'self' of shape " +
                     shape_string(values != nullptr ? *values : std::span<const int64_t>{}));
  }
  return Error::Ok;
}

/// The sorter is int64 indices with the boundaries' shape.
inline Error sorter_args(DType dtype, std::span<const int64_t> sorter, std::span<const int64_t> boundaries) {
  if (dtype != DType::Int64)
    return invalid(std::string("argument 'sorter' has dtype ") + dtype_name(dtype) + ", expected int64");
  if (!std::equal(sorter.begin(), sorter.end(), boundaries.begin(), boundaries.end()))
    return invalid("argument 'sorter' has shape " + shape_string(sorter) + ", expected " +
                   shape_string(boundaries) + " (the boundaries' shape)");
  return Error::Ok;
}

/// ATen's result dtype of boundaries (with dimensions) and values: a 0-d
/// value tensor, or a Scalar (`values` empty; the default dtype, float32),
/// decides it only when of a higher dtype class (integral < floating <
/// complex). Unlike ResultType this never fails, so an unsupported pair
/// reaches compare_dtype's message.
inline DType compare_dtype_of(DType boundaries, std::optional<DType> values, int64_t value_dim) {
  if (values && value_dim > 0) return promote_types(boundaries, *values);
  const DType lower = values ? *values : DType::Float32;
  if (is_complex_class(boundaries)) return boundaries;
  if (is_complex_class(lower))
    return is_floating_class(boundaries) ? promote_types(boundaries, DType::Complex64) : lower;
  if (is_floating_class(boundaries)) return boundaries;
  if (boundaries == DType::Bool || is_floating_class(lower)) return promote_types(boundaries, lower);
  return boundaries;
}

/// The dtypes both devices' kernels search in: floating and integral, but
/// neither bool nor the wide unsigned ones (as ATen dispatches).
inline bool searchable(DType d) {
  return d == DType::UInt8 || d == DType::Int8 || d == DType::Int16 || d == DType::Int32 ||
         d == DType::Int64 || d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 ||
         d == DType::Float64;
}

/// Error unless `common` is searchable; `on_device` ends the message ("the
/// CPU", "CUDA").
inline Error compare_dtype(DType common, const char* op, const char* on_device) {
  if (!searchable(common))
    return invalid(std::string("boundaries and values compare as ") + dtype_name(common) + ", which " + op +
                   " does not support on " + on_device);
  return Error::Ok;
}

}  // namespace kiln::aoti::search
