// Whether a Scalar (a double in the C ABI) converts to a dtype without
// overflow, as ATen's checked Scalar conversion: the finite range of each
// dtype (infinities and NaN pass for floating dtypes, integer dtypes take
// neither). Shared by every device's fill_.
#pragma once

#include <cmath>
#include <limits>

#include "kiln/dtype.h"

namespace kiln::aoti {

inline bool scalar_fits(double v, DType dt) noexcept {
  auto in = [&](double lo, double hi) { return !(v < lo || v > hi); };
  switch (dt) {
    case DType::Bool: return true;
    case DType::UInt8: return !std::isnan(v) && in(0, 255);
    case DType::Int8: return !std::isnan(v) && in(-128, 127);
    case DType::Int16: return !std::isnan(v) && in(-32768, 32767);
    case DType::UInt16: return !std::isnan(v) && in(0, 65535);
    case DType::Int32: return !std::isnan(v) && in(-2147483648.0, 2147483647.0);
    case DType::UInt32: return !std::isnan(v) && in(0, 4294967295.0);
    case DType::Int64: return !std::isnan(v) && in(-9223372036854775808.0, 9223372036854775807.0);
    case DType::UInt64: return !std::isnan(v) && in(0, 18446744073709551615.0);
    case DType::Float16: return std::isinf(v) || in(-65504.0, 65504.0);
    case DType::BFloat16: return std::isinf(v) || in(-3.3895313892515355e38, 3.3895313892515355e38);
    case DType::Float32:
    case DType::Complex64:
      return std::isinf(v) || in(-std::numeric_limits<float>::max(), std::numeric_limits<float>::max());
    default: return true;
  }
}

}  // namespace kiln::aoti
