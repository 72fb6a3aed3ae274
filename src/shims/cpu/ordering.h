// What the ordering ops (sort, topk, kthvalue, median, mode, cummax,
// searchsorted, histograms) share: ATen's order with NaN above every number,
// moving one line along a dimension in and out of a row-major buffer, and the
// dtype sets ATen's CPU kernels accept.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/common/shim_util.h"

namespace kiln::cpu {

template <typename T>
inline bool is_nan_value(T v) noexcept {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

/// a before b in ascending order, NaN after every number (ATen's sort order).
template <typename T>
inline bool less_nan_last(T a, T b) noexcept {
  return (!is_nan_value(a) && is_nan_value(b)) || a < b;
}

/// a before b in descending order, NaN before every number.
template <typename T>
inline bool greater_nan_first(T a, T b) noexcept {
  return (is_nan_value(a) && !is_nan_value(b)) || a > b;
}

/// Copies line `line` of `split` out of the row-major buffer `v`.
template <typename T>
void gather_line(const std::vector<T>& v, const DimSplit& split, int64_t line, std::vector<T>& out) {
  out.resize(static_cast<size_t>(split.size));
  const int64_t start = split.line_start(line);
  for (int64_t i = 0; i < split.size; ++i) out[static_cast<size_t>(i)] = v[static_cast<size_t>(start + i * split.inner)];
}

/// Dtype families ATen's CPU kernels dispatch over, combined as a bit set.
enum DTypeSet : unsigned {
  kAllTypes = 1,     // uint8, int8, int16, int32, int64, float32, float64
  kReducedFloat = 2, // float16, bfloat16
  kBool = 4,
  kWideUnsigned = 8, // uint16, uint32, uint64
  kComplexTypes = 16,
};

inline bool dtype_in(DType d, unsigned set) noexcept {
  switch (d) {
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Float32: case DType::Float64:
      return (set & kAllTypes) != 0;
    case DType::Float16: case DType::BFloat16: return (set & kReducedFloat) != 0;
    case DType::Bool: return (set & kBool) != 0;
    case DType::UInt16: case DType::UInt32: case DType::UInt64: return (set & kWideUnsigned) != 0;
    case DType::Complex64: case DType::Complex128: return (set & kComplexTypes) != 0;
    default: return false;
  }
}

/// Error unless argument `name` of `op` has a dtype in `set`.
inline Error expect_dtype_in(const Tensor& t, unsigned set, const char* name, const char* op) {
  if (dtype_in(t.dtype(), set)) return Error::Ok;
  return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype()) + ", which " + op +
                       " does not support on the CPU");
}

/// `v` rounded to the precision of floating dtype `d` (as ATen computes in d).
inline double round_to_dtype(double v, DType d) noexcept {
  if (d == DType::Float64) return v;
  alignas(16) unsigned char cell[16];
  write_element<double>(cell, d, v);
  return read_element<double>(cell, d);
}

}  // namespace kiln::cpu
