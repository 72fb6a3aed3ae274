// Argument checks and fixed results shared by every device's kthvalue,
// median and nanmedian, so the devices refuse the same inputs with the same
// messages and agree on the value of an empty median.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti {

/// kthvalue's line checks: the reduced dimension `dim` (of `size` elements)
/// must not be empty and 1 <= k <= size.
inline Error kthvalue_line_args(int64_t size, int64_t k, int64_t dim) {
  if (size == 0)
    return invalid("argument 'self' has size 0 in dimension " + std::to_string(dim) + ", which kthvalue reduces");
  if (k < 1 || k > size)
    return invalid("argument 'k' is " + std::to_string(k) + ", out of range for dimension " + std::to_string(dim) +
                   " of size " + std::to_string(size));
  return Error::Ok;
}

/// The median of an empty integer tensor of dtype `d`: ATen builds a float
/// NaN on the host and converts it to `d` there (also for a CUDA input), so
/// the value is what x86 makes of NaN: the lowest int32 / int64, and 0 for
/// the narrower types, which truncate that int32.
inline int64_t empty_median_integer(DType d) {
  if (d == DType::Int64) return std::numeric_limits<int64_t>::min();
  if (d == DType::Int32) return std::numeric_limits<int32_t>::min();
  return 0;
}

}  // namespace kiln::aoti
