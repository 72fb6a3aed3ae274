// aten::pad's arguments checked as ATen checks them, for every device's
// aoti_torch_<device>_pad: the mode, the number of amounts against the rank,
// the value (constant mode only), and for each padded dimension its result
// size, with ATen's refusals (reflect amounts not below the size, circular
// wrapping more than once, constant crops past the size, empty reflect and
// replicate inputs). The devices differ only in how they copy and in the
// layout of the result.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln::aoti {

enum class PadMode : int { Constant, Reflect, Replicate, Circular };

/// One dimension of the input: pad[2k], pad[2k+1] are the amounts of
/// dimension rank-1-k. A dimension that is not padded has before = after = 0.
struct PadDimension {
  int64_t size = 0;    ///< the input's size
  int64_t before = 0;  ///< amount added (negative: cropped) before the first element
  int64_t after = 0;   ///< amount added (negative: cropped) after the last element
  int64_t crop_lo = 0; ///< elements cropped from the start, max(-before, 0)
  int64_t kept = 0;    ///< elements of the input left after the crops
};

struct PadArgs {
  PadMode mode = PadMode::Constant;
  std::vector<PadDimension> dims;   ///< one per input dimension
  std::vector<int64_t> out_sizes;   ///< the result's sizes
  bool crop_only = true;            ///< no amount is positive
};

/// The checked arguments, or InvalidArgument with ATen's message. `value`
/// may be null. Exported for the CUDA plugin.
KILN_API Result<PadArgs> pad_args(std::span<const int64_t> sizes, std::span<const int64_t> amounts, const char* mode,
                                  const double* value);

}  // namespace kiln::aoti
