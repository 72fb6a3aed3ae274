// The dtypes cummax and cummin take on every device (those ATen's kernels
// dispatch on: bool, the integers but the wide unsigned ones, and the
// floating dtypes) and the message for any other, which differs between
// devices only in naming the device.
#pragma once

#include <string>

#include "shims/common/shim_util.h"

namespace kiln::aoti {

inline bool cum_extreme_dtype(DType d) {
  return d == DType::Bool || d == DType::UInt8 || d == DType::Int8 || d == DType::Int16 ||
         d == DType::Int32 || d == DType::Int64 || d == DType::Float16 || d == DType::BFloat16 ||
         d == DType::Float32 || d == DType::Float64;
}

/// Error unless `self` of cummax (`max`) or cummin has a dtype both take;
/// `on_device` ends the message ("the CPU", "CUDA").
inline Error cum_extreme_dtype_check(DType self, bool max, const char* on_device) {
  if (cum_extreme_dtype(self)) return Error::Ok;
  return invalid(std::string("argument 'self' has dtype ") + dtype_name(self) + ", which " +
                 (max ? "cummax" : "cummin") + " does not support on " + on_device);
}

}  // namespace kiln::aoti
