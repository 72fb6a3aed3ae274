// Argument checks of factory ops shared by every device's
// aoti_torch_<device>_<op> (the device, layout and pin_memory arguments are
// each device's own): sizes, and the window functions' length and dtype.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/dtype_promotion.h"
#include "shims/common/op_util.h"

namespace kiln::aoti {

/// InvalidArgument naming the first negative entry of `sizes` (argument `name`).
inline Error nonnegative_sizes(std::span<const int64_t> sizes, const char* name) {
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0)
      return invalid(std::string("argument '") + name + "' has negative dimension " + std::to_string(sizes[i]) +
                     " at index " + std::to_string(i));
  return Error::Ok;
}

/// ATen's window_function_checks for `op` (hann_window, ...): a floating
/// dtype and a non-negative length.
inline Error window_args(const char* op, int64_t window_length, DType dtype) {
  if (!is_floating_class(dtype))
    return invalid(std::string(op) + " expects a floating point dtype, got " + dtype_name(dtype));
  if (window_length < 0)
    return invalid(std::string(op) + " requires non-negative window_length, got " + std::to_string(window_length));
  return Error::Ok;
}

}  // namespace kiln::aoti
