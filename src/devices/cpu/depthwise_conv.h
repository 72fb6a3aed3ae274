// Depthwise convolutions on the CPU: one input channel per group, so each
// output channel is a small filter slid over one input plane. A GEMM over
// such a thin product wastes its time packing, so these are direct loops,
// split over the model call's OpenMP team (parallel_for.h). Both write
// `y` completely (bias included, nullptr for none) and are reentrant.
#pragma once

#include "devices/cpu/conv_geometry.h"
#include "kiln/error.h"

namespace kiln::cpu::conv {

/// One output channel per group, channels innermost in `x` and `y` (NHWC):
/// per output pixel, all channels at once as one dense vector per tap.
Error depthwise_channels_last(const Strided5& x, const Strided5& w, const float* bias, const ConvShape& s,
                              const OutputLayout& y);

/// Any layout, a few output channels per group: output rows accumulated one
/// weight tap at a time over the columns it reaches, with unit-stride reads.
Error depthwise_rows(const Strided5& x, const Strided5& w, const float* bias, const ConvShape& s,
                     const OutputLayout& y);

}  // namespace kiln::cpu::conv
