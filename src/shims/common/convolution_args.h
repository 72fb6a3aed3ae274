// aten::convolution's arguments checked as ATen checks them, for every
// device's aoti_torch_<device>_convolution: ranks, channel counts against the
// groups, strides, paddings, dilations and output paddings expanded to one per
// spatial dim, and the output's sizes. The devices' ops differ only in how
// they compute.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln::aoti {

struct ConvolutionArgs {
  int spatial = 0;  ///< 1..3
  bool transposed = false;
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  /// One value per spatial dim each (output_padding all zero unless transposed).
  std::vector<int64_t> stride, padding, dilation, output_padding;
  /// [batch, out_channels, spatial sizes...]
  std::vector<int64_t> output_sizes;
};

/// The checked arguments, or InvalidArgument naming the one that is wrong.
/// `bias` is the bias's sizes when there is one. Exported for the CUDA plugin.
KILN_API Result<ConvolutionArgs> convolution_args(std::span<const int64_t> input, std::span<const int64_t> weight,
                                         std::optional<std::span<const int64_t>> bias, const int64_t* stride,
                                         int64_t stride_len, const int64_t* padding, int64_t padding_len,
                                         const int64_t* dilation, int64_t dilation_len, bool transposed,
                                         const int64_t* output_padding, int64_t output_padding_len, int64_t groups);

}  // namespace kiln::aoti
