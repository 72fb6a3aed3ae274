// C = A @ B (+ a bias per column) in float32 with B packed ahead of time into
// panels of 32 columns: the products of layers whose weight is constant
// (convolutions over their patch rows), packed once per weight instead of on
// every call as OpenBLAS does (sgemm_incopy / sgemm_oncopy). A is read where
// it lies. AVX-512F only (packed_gemm_available says whether this CPU has
// it); thread-safe, no allocation.
#pragma once

#include <cstdint>

namespace kiln::cpu {

/// Columns per panel of a packed B: two 16-float vectors.
inline constexpr int64_t kPackedPanelCols = 32;
/// Rows of A per register tile: a row split at multiples of this keeps whole tiles.
inline constexpr int64_t kPackedTileRows = 12;

/// True when this CPU runs packed_gemm (AVX-512F).
bool packed_gemm_available() noexcept;

/// Floats a packed k x n B takes: ceil(n / 32) panels of k x 32.
int64_t packed_b_floats(int64_t k, int64_t n) noexcept;

/// Packs B (k x n, element (i, j) at b[i * row_stride + j * col_stride]) into
/// `packed` (packed_b_floats(k, n) floats): panel p holds, row after row, the
/// 32 columns 32p .. 32p + 31 of each of the k rows, zeros past column n.
void pack_b(const float* b, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride, float* packed) noexcept;

/// C[i, j] = sum_l A[i, l] * B[l, j] (+ bias[j] when bias is not null) for
/// i < m and j < n, over the first ceil(n / 32) panels of `packed_b` (a k x N
/// packing with N >= n; pass packed_b + (j0 / 32) * k * 32 and bias + j0 to
/// start at a panel-aligned column j0). A's rows are `lda` floats apart, C's
/// `ldc`, both unit-stride. C's old values are not read.
void packed_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* packed_b,
                 const float* bias, float* c, int64_t ldc) noexcept;

}  // namespace kiln::cpu
