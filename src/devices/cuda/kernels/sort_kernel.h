// Sorting along one dimension on the GPU (sort, topk, and what builds on them):
// the lines of a tensor of any strides are gathered into a [lines, size]
// buffer as radix keys with their positions, sorted stably per line by CUB's
// segmented sort (keys order as ATen does: NaN after +inf ascending and first
// descending, -0.0 equal to 0.0), and the first `count` of each line scattered back into a tensor laid
// out by an indexer. Plus nonzero's flat-index selection.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// True if sort_lines can sort `dtype` (every real dtype Kiln computes on).
bool sortable(DType dtype);

/// Device workspace launch_sort_lines needs for these lines (0 when empty).
Result<size_t> sort_lines_workspace(DType dtype, const LineShape& shape);

/// Sorts each line of `in` (dtype, in_index over its sizes) and writes the
/// first `count` elements of each sorted line, values to `values` (dtype)
/// and their positions along the line (int64) to `indices`, both laid out by
/// out_index (sizes: in's with the line dimension `count`).
Error launch_sort_lines(const void* in, DType dtype, const StridedIndexer& in_index, const LineShape& shape,
                        bool descending, int64_t count, void* values, int64_t* indices,
                        const StridedIndexer& out_index, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream);

/// Workspace for nonzero_flat over `numel` elements.
Result<size_t> nonzero_workspace(int64_t numel);

/// Writes the row-major numbers of the non-zero elements of `in` to
/// `flat_out` (capacity numel), in order, and their count to *count_device
/// (device memory). Asynchronous.
Error launch_nonzero_flat(const void* in, DType dtype, const StridedIndexer& in_index, int64_t numel,
                          int64_t* flat_out, int64_t* count_device, void* workspace, size_t workspace_bytes,
                          cudaStream_t stream);

/// out[r, d] (laid out by out_stride_row, out_stride_dim) = coordinate d of
/// row-major element flat[r] of a tensor of `sizes` (ndim of them).
Error launch_unravel(const int64_t* flat, int64_t rows, const StridedIndexer& sizes, int64_t* out,
                     int64_t out_stride_row, int64_t out_stride_dim, cudaStream_t stream);

}  // namespace kiln::cudadev
