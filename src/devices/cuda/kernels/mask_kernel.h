// Selections whose result positions depend on the data (masked_scatter,
// masked_select, nonzero_static, repeat_interleave) on the GPU: a device-wide
// exclusive prefix count of the selected elements (CUB's DeviceScan) tells
// every element where it goes, so the kernels that move the elements need no
// host round trip; only an op that must size its result from the count reads
// it back (shims/cuda/masked_select.cpp and the others decide that).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Device workspace launch_mask_positions needs for `numel` elements.
Result<size_t> mask_positions_workspace(int64_t numel);

/// positions[k] for k in [0, numel] = how many of the row-major elements
/// before k of `in` (any dtype incl. complex and bool, read at in_index over
/// the shape being walked, which may broadcast) are non-zero; positions[numel]
/// is the total. positions holds numel + 1 int64. Asynchronous.
Error launch_mask_positions(const void* in, DType dtype, const StridedIndexer& in_index, int64_t numel,
                            int64_t* positions, void* workspace, size_t workspace_bytes, cudaStream_t stream);

/// out (contiguous, numel elements of element_bytes) = element k of self (at
/// self_index) where element k is not selected (positions[k + 1] ==
/// positions[k]), else element positions[k] of source (row-major over
/// source_index, clamped to its source_numel elements; with none, self's).
Error launch_masked_scatter(void* out, const void* self, const StridedIndexer& self_index, const int64_t* positions,
                            const void* source, const StridedIndexer& source_index, int64_t source_numel,
                            int64_t numel, int64_t element_bytes, cudaStream_t stream);

/// out[positions[k]] = element k of self (at self_index) for each selected k.
Error launch_masked_select(void* out, const void* self, const StridedIndexer& self_index, const int64_t* positions,
                           int64_t numel, int64_t element_bytes, cudaStream_t stream);

/// out, int64 [size, shape.ndim] with strides (1, size): row r < total the
/// coordinates (over `shape`) of the selected element with positions[k] == r,
/// rows from min(total, size) on `fill_value`, total being positions[numel].
Error launch_nonzero_static(const int64_t* positions, int64_t numel, const StridedIndexer& shape, int64_t size,
                            int64_t fill_value, int64_t* out, cudaStream_t stream);

/// Device workspace launch_repeat_ends needs for `n` repeat counts.
Result<size_t> repeat_ends_workspace(int64_t n);

/// ends[i] = the sum of max(repeats[j], 0) for j <= i (repeats: n int64 or
/// int32 values `stride` elements apart), and, unless it is null,
/// first_negative (set it to all ones first) lowered to the first i with
/// repeats[i] < 0. Asynchronous.
Error launch_repeat_ends(const void* repeats, DType dtype, int64_t stride, int64_t n, int64_t* ends,
                         unsigned long long* first_negative, void* workspace, size_t workspace_bytes,
                         cudaStream_t stream);

/// out[j] (contiguous, `total` values of dtype int64 or int32) = the i with
/// ends[i - 1] <= j < ends[i]; a j past ends[n - 1] gets n - 1 (0 when n is 0).
Error launch_repeat_expand(const int64_t* ends, int64_t n, void* out, DType dtype, int64_t total,
                           cudaStream_t stream);

}  // namespace kiln::cudadev
