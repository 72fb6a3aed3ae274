#include "devices/cpu/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

namespace kiln::cpu {

namespace {

// Rows of A per register tile: ROWS x 2 accumulators, 2 vectors of B and one
// broadcast of A fill 27 of the 32 vector registers.
constexpr int kTileRows = static_cast<int>(kPackedTileRows);
// Rows of B per pass over C: the 32 KB panel slice a pass reads stays in L1
// while every row tile of A goes past it.
constexpr int64_t kDepth = 256;
// Rows of A per block: the block's kDepth-wide slice (192 KB) stays in L2
// while every panel of B goes past it. Unblocked, a tall A (a 1x1
// convolution over a batch's pixels) came from memory once per panel.
constexpr int64_t kBlockRows = 16 * kTileRows;

// C tile (ROWS x up to 32 columns) over rows [0, kc) of a panel slice: with
// `first` the tile starts from zero (else from C), with `bias` that is added
// (the last slice).
template <int ROWS>
[[gnu::target("avx512f")]] void tile(const float* a, int64_t lda, const float* b, int64_t kc, float* c, int64_t ldc,
                                     __mmask16 mask0, __mmask16 mask1, bool first, const float* bias) noexcept {
  __m512 acc0[ROWS], acc1[ROWS];
  if (first) {
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      acc0[r] = _mm512_maskz_loadu_ps(mask0, c + r * ldc);
      acc1[r] = _mm512_maskz_loadu_ps(mask1, c + r * ldc + 16);
    }
  }
#pragma GCC unroll 4
  for (int64_t l = 0; l < kc; ++l) {
    const __m512 b0 = _mm512_loadu_ps(b + l * kPackedPanelCols);
    const __m512 b1 = _mm512_loadu_ps(b + l * kPackedPanelCols + 16);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * lda + l]);
      acc0[r] = _mm512_fmadd_ps(x, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(x, b1, acc1[r]);
    }
  }
  if (bias) {
    const __m512 bias0 = _mm512_maskz_loadu_ps(mask0, bias), bias1 = _mm512_maskz_loadu_ps(mask1, bias + 16);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      acc0[r] = _mm512_add_ps(acc0[r], bias0);
      acc1[r] = _mm512_add_ps(acc1[r], bias1);
    }
  }
  if (mask0 == 0xFFFF && mask1 == 0xFFFF) {
    // Whole panel: plain stores, which run faster than masked ones (AMD's Zen 4 especially).
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      _mm512_storeu_ps(c + r * ldc, acc0[r]);
      _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
    }
    return;
  }
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, mask0, acc0[r]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, mask1, acc1[r]);
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, __mmask16, bool,
                        const float*) noexcept;

template <int... R>
constexpr std::array<TileFn, sizeof...(R)> tiles(std::integer_sequence<int, R...>) {
  return {&tile<R + 1>...};
}

}  // namespace

bool packed_gemm_available() noexcept {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

int64_t packed_b_floats(int64_t k, int64_t n) noexcept {
  return (n + kPackedPanelCols - 1) / kPackedPanelCols * k * kPackedPanelCols;
}

void pack_b(const float* b, int64_t k, int64_t n, int64_t row_stride, int64_t col_stride, float* packed) noexcept {
  for (int64_t j0 = 0; j0 < n; j0 += kPackedPanelCols) {
    const int64_t cols = std::min(kPackedPanelCols, n - j0);
    float* panel = packed + j0 * k;
    if (col_stride == 1) {
      for (int64_t l = 0; l < k; ++l) {
        float* row = panel + l * kPackedPanelCols;
        const float* src = b + l * row_stride + j0;
        std::copy(src, src + cols, row);
        std::fill(row + cols, row + kPackedPanelCols, 0.0f);
      }
    } else {
      // Column-major B (a weight stored n x k): walk each column once, writing
      // its k values a panel row apart.
      for (int64_t j = 0; j < kPackedPanelCols; ++j) {
        const float* src = b + (j0 + j) * col_stride;
        for (int64_t l = 0; l < k; ++l) panel[l * kPackedPanelCols + j] = j < cols ? src[l * row_stride] : 0.0f;
      }
    }
  }
}

void packed_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* packed_b,
                 const float* bias, float* c, int64_t ldc) noexcept {
  static constexpr auto kTiles = tiles(std::make_integer_sequence<int, kTileRows>{});
  if (m <= 0 || n <= 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  for (int64_t i0 = 0; i0 < m; i0 += kBlockRows) {
    const int64_t i1 = std::min(m, i0 + kBlockRows);
    for (int64_t l0 = 0; l0 < k; l0 += kDepth) {
      const int64_t kc = std::min(kDepth, k - l0);
      const bool first = l0 == 0, last = l0 + kc == k;
      for (int64_t j0 = 0; j0 < n; j0 += kPackedPanelCols) {
        const int64_t cols = std::min(kPackedPanelCols, n - j0);
        const auto mask0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
        const auto mask1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFF : cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
        const float* b = packed_b + j0 * k + l0 * kPackedPanelCols;
        const float* tile_bias = last && bias ? bias + j0 : nullptr;
        // Tiles of near-equal height: 49 rows run as 10+10+10+10+9, not 12+12+12+12+1, whose
        // last tile would do two multiply-adds per two loads of B.
        const int64_t tiles = (i1 - i0 + kTileRows - 1) / kTileRows;
        for (int64_t t = 0, i = i0; t < tiles; ++t) {
          const int64_t rows = (i1 - i0) / tiles + (t < (i1 - i0) % tiles ? 1 : 0);
          kTiles[rows - 1](a + i * lda + l0, lda, b, kc, c + i * ldc + j0, ldc, mask0, mask1, first, tile_bias);
          i += rows;
        }
      }
    }
  }
}

}  // namespace kiln::cpu
