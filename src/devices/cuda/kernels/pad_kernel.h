// aten::pad on the GPU (kernels/pad_kernel.cu): one gather over the result,
// each element copied from the input element its mode maps it to (or the
// constant value), so one kernel serves every mode, dtype and layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class PadMode : int { Constant, Reflect, Replicate, Circular };

/// How each dimension maps a result index i to an input index: j = i - before,
/// then by mode (constant: outside [0, size) takes the value; reflect: mirror
/// without repeating the edge; replicate: clamp; circular: wrap over the
/// `kept` elements left after cropping, starting at crop_lo). A dimension that
/// is not padded has before = crop_lo = 0 and kept = size.
struct PadDim {
  int64_t size = 0;
  int64_t before = 0;
  int64_t crop_lo = 0;
  int64_t kept = 0;
};

struct PadGeometry {
  int ndim = 0;
  PadMode mode = PadMode::Constant;
  PadDim dims[StridedIndexer::kMaxDims];
  StridedIndexer out;      ///< the result's sizes and strides
  int64_t in_strides[StridedIndexer::kMaxDims] = {};
};

/// Writes every element of the result `out` (dtype `dtype`) from `in`.
/// `value` is the constant mode's fill, stored with ATen's cast (complex:
/// value + 0i); for a dtype the element helpers cannot convert to (float8,
/// quantized) only 0 is accepted by the caller and written as zero bytes.
Error launch_pad(const void* in, void* out, DType dtype, const PadGeometry& geometry, double value,
                 cudaStream_t stream);

}  // namespace kiln::cudadev
