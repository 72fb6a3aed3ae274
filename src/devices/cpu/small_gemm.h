// C = alpha * A @ W^T + beta * C for a few rows of float32: the products of a
// linear layer (W stored n x k, as nn.Linear keeps its weight) at batch x
// sequence sizes of 2-8 rows, such as one short sentence through MiniLM.
// OpenBLAS packs the whole weight into its panel layout on every GEMM call
// (sgemm_incopy), which at this size costs as much as the product; this
// kernel instead streams each weight row once, straight from where it lies,
// against all rows of A held in registers. AVX-512 only (small_gemm_available
// says whether this CPU has it); thread-safe, no allocation.
#pragma once

#include <cstdint>

namespace kiln::cpu {

/// The most rows of A (and C) small_gemm takes.
inline constexpr int64_t kSmallGemmMaxRows = 8;

/// True when this CPU runs small_gemm (AVX-512F).
bool small_gemm_available() noexcept;

/// C[i, j] = alpha * sum_k A[i, k] * W[j, k] + beta * C[i, j] for i < m, j < n,
/// 1 <= m <= kSmallGemmMaxRows; rows of A, W and C are `lda`, `ldw`, `ldc`
/// elements apart, each row unit-stride. With beta == 0, C's old values are
/// not read.
void small_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* w,
                int64_t ldw, float beta, float* c, int64_t ldc) noexcept;

}  // namespace kiln::cpu
