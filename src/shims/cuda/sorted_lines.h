// Sorting the lines of a tensor for the CUDA ops built on a sort (sort, topk's
// callers, kthvalue, median, nanmedian, mode): the sort kernels' workspace
// comes from the caching allocator here, once, instead of in every op.
#pragma once

#include <cstdint>

#include "devices/cuda/kernels/sort_kernel.h"
#include "shims/cuda/tensor_ref.h"

namespace kiln::cudadev {

/// Sorts each line of `self` along `shape` (ascending unless `descending`;
/// NaN above +inf) and writes the first `count` of each, values to `values`
/// (self's dtype) and positions along the line to `positions`, both laid out
/// by `out_index` (self's sizes with the line dimension `count`).
Error sort_lines(const TensorRef& self, const LineShape& shape, bool descending, int64_t count, void* values,
                 int64_t* positions, const StridedIndexer& out_index);

/// The first `count` ascending elements of every line and their positions,
/// as rows of [lines, count] buffers: line (outer o, inner n) is row
/// o * inner + n, the order of a reduced result's elements.
struct SortedRows {
  DeviceBuffer values;     ///< self's dtype
  DeviceBuffer positions;  ///< int64
};
Result<SortedRows> sort_lines_to_rows(const TensorRef& self, const LineShape& shape, int64_t count);

}  // namespace kiln::cudadev
