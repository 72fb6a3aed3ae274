// segment_reduce on the GPU (kernels/segment_reduce_kernel.cu): the segment
// bounds from lengths (a block scan per row) or offsets, checked and clamped
// so no read leaves data whatever the values; then one thread per result
// element reducing its segment sequentially in data's dtype, as ATen's CUDA
// kernel does (a warp per segment when the axis is innermost and segments
// are long, as ATen's CUB path for 1-d data reduces in a tree).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// A call's shapes: data is outer x width x inner around the reduced axis
/// (any strides, `data`; `axis_stride` its stride along the axis), split
/// into `segments` per outer row by lengths (outer x segments) or offsets
/// (outer x (segments + 1)), int32 or int64 of any strides (`seg`).
struct SegmentGeometry {
  int64_t outer = 1;
  int64_t width = 0;
  int64_t inner = 1;
  int64_t segments = 0;
  int64_t axis_stride = 1;
  StridedIndexer data;
  StridedIndexer seg;
  DType seg_dtype = DType::Int64;
  bool by_lengths = true;
};

/// Writes the bounds of every segment into `starts` (outer x (segments + 1)
/// int64: segment s of row o spans [starts[o][s], starts[o][s + 1])),
/// clamped into [0, width]. When `bad` is not null, stores 1 there if a value
/// breaks the rules of shims/common/segment_reduce_args.h (a negative length,
/// lengths summing past width, an offset outside [0, width] or below the one
/// before it, or, unless `unsafe`, segments not covering width exactly).
Error launch_segment_starts(const void* seg, const SegmentGeometry& g, bool unsafe, int64_t* starts, int* bad,
                            cudaStream_t stream);

/// The reductions.
enum class SegmentReduce { Sum, Mean, Max, Min, Prod };

/// Reduces each segment into the contiguous result `out` (outer x segments x
/// inner, data's dtype: float32, float64, float16 or bfloat16), starting
/// from `initial` (converted to the dtype) when `has_initial`, else from 0
/// (sum, mean), 1 (prod), -inf (max) or inf (min). Every step rounds to the
/// dtype; max/min keep a NaN; mean divides a non-NaN sum by the length and
/// gives NaN for an empty segment without an initial value.
Error launch_segment_reduce(const void* data, DType dtype, const SegmentGeometry& g, const int64_t* starts,
                            SegmentReduce op, bool has_initial, double initial, void* out, cudaStream_t stream);

}  // namespace kiln::cudadev
