// The data movement around the CUDA linear-algebra ops: lu_unpack's L, U and
// P (one kernel each, no library), identity matrices (cholesky_inverse solves
// against them) and the per-matrix pointer arrays cuBLAS's batched routines
// take. Elements are moved by size (1, 2, 4, 8 or 16 bytes), so one kernel
// serves every dtype; only the bit pattern of 1 depends on the dtype.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// An element's bytes (little-endian, the first element_size(dtype) of 16).
struct ElementBits {
  unsigned long long lo = 0;
  unsigned long long hi = 0;
};

/// The bits of 1 in `dtype` (complex: 1 + 0i); false for the float8 dtypes.
bool one_bits(DType dtype, ElementBits* one);

/// L (contiguous [batches, m, k], unit lower triangular: LU's entries below
/// the diagonal, ones on it) and U (contiguous [batches, k, n], LU's entries on
/// and above the diagonal), k = min(m, n), from LU read through `lu_index`
/// (its sizes [..., m, n] and element strides). Either output may be empty.
Error launch_lu_unpack_data(const void* lu, const StridedIndexer& lu_index, void* l, void* u, int64_t batches,
                            int64_t m, int64_t n, size_t element_bytes, ElementBits one, cudaStream_t stream);

/// P (contiguous [batches, m, m], which must be zero) with A = P L U from the
/// 1-based row swaps `pivots` (int32, read through `pivots_index`, sizes
/// [..., k]). `perm` is scratch of batches * m int64. A pivot outside [1, m]
/// is skipped; with `first_bad` (initialised to all ones) the smallest
/// row-major position of such a pivot is recorded there.
Error launch_lu_unpack_pivots(const int32_t* pivots, const StridedIndexer& pivots_index, void* p, int64_t* perm,
                              int64_t batches, int64_t m, int64_t k, size_t element_bytes, ElementBits one,
                              unsigned long long* first_bad, cudaStream_t stream);

/// Writes `one` on the diagonal of each of `batches` n x n matrices at
/// `out` + b * matrix_stride (elements); the rest is left as it is.
Error launch_set_diagonal(void* out, int64_t batches, int64_t n, int64_t matrix_stride, size_t element_bytes,
                          ElementBits one, cudaStream_t stream);

/// pointers[b] = base + b * stride_bytes for b < count (cuBLAS's batched
/// routines take one pointer per matrix, in device memory).
Error launch_batch_pointers(void** pointers, void* base, int64_t stride_bytes, int64_t count, cudaStream_t stream);

}  // namespace kiln::cudadev
