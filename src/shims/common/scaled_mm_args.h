// Argument checks shared by every device's _scaled_mm and _scaled_mm_out (the
// float8 matrix product), so the devices refuse the same inputs with the same
// messages. Sizes and dtypes only: the scales' layouts differ per device (the
// CPU takes per-tensor scales only, CUDA row-wise ones too) and each device
// reads its tensors itself.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti {

inline bool is_float8(DType d) { return d == DType::Float8_e4m3fn || d == DType::Float8_e5m2; }

/// Integers, bool and the four floating dtypes: what a float32 value converts
/// to and a bias may be read from (not complex, not float8).
inline bool scaled_mm_real_dtype(DType d) {
  switch (d) {
    case DType::Bool: case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32:
    case DType::Int64: case DType::UInt16: case DType::UInt32: case DType::UInt64: case DType::Float16:
    case DType::BFloat16: case DType::Float32: case DType::Float64:
      return true;
    default:
      return false;
  }
}

/// self (m x k) and mat2 (k x n): matrices of float8 (e4m3fn or e5m2).
inline Error scaled_mm_operands(DType self_dtype, std::span<const int64_t> self, DType mat2_dtype,
                                std::span<const int64_t> mat2) {
  if (self.size() != 2) return invalid("argument 'self' must be a matrix, got shape " + shape_string(self));
  if (mat2.size() != 2) return invalid("argument 'mat2' must be a matrix, got shape " + shape_string(mat2));
  if (self[1] != mat2[0])
    return invalid("shapes of 'self' " + shape_string(self) + " and 'mat2' " + shape_string(mat2) +
                   " cannot be multiplied");
  if (!is_float8(self_dtype))
    return invalid(std::string("argument 'self' has dtype ") + dtype_name(self_dtype) +
                   ", expected float8_e4m3fn or float8_e5m2");
  if (!is_float8(mat2_dtype))
    return invalid(std::string("argument 'mat2' has dtype ") + dtype_name(mat2_dtype) +
                   ", expected float8_e4m3fn or float8_e5m2");
  return Error::Ok;
}

/// scale_result, when given: one float32 element.
inline Error scaled_mm_scale_result(DType dtype, std::span<const int64_t> sizes, int64_t numel) {
  if (numel != 1 || dtype != DType::Float32)
    return invalid("argument 'scale_result' must be a float32 scalar (one element), got dtype " +
                   std::string(dtype_name(dtype)) + " shape " + shape_string(sizes));
  return Error::Ok;
}

/// bias, when given: n elements of a real non-float8 dtype (how they spread
/// over the result is the device's rule).
inline Error scaled_mm_bias(DType dtype, int64_t numel, int64_t n) {
  if (numel != n)
    return invalid("argument 'bias' has " + std::to_string(numel) + " elements, expected " + std::to_string(n));
  if (!scaled_mm_real_dtype(dtype))
    return invalid(std::string("argument 'bias' has dtype ") + dtype_name(dtype) +
                   ", which cannot be added to the float32 product");
  return Error::Ok;
}

/// The result's dtype (`what` names it: "argument 'out_dtype' is" or
/// "argument 'out' has dtype"): float8 or any real or complex dtype (the
/// float32 product converts to it as .to(dtype) does).
inline Error scaled_mm_result_dtype(DType dtype, const char* what) {
  if (!is_float8(dtype) && !scaled_mm_real_dtype(dtype) && dtype != DType::Complex64 && dtype != DType::Complex128)
    return invalid(std::string(what) + " " + dtype_name(dtype) + ", which the result cannot be converted to");
  return Error::Ok;
}

/// _scaled_mm_out: out_dtype, when given, must be out's dtype.
inline Error scaled_mm_out_dtype(std::optional<DType> requested, DType out) {
  if (requested && *requested != out)
    return invalid(std::string("argument 'out_dtype' is ") + dtype_name(*requested) + " but 'out' has dtype " +
                   dtype_name(out) + "; they must match");
  return Error::Ok;
}

}  // namespace kiln::aoti
