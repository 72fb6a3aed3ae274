#include "devices/cpu/small_gemm.h"

#include <immintrin.h>

namespace kiln::cpu {

namespace {

// The sum of a vector's lanes (through memory: GCC 12's _mm512_reduce_add_ps
// trips its own -Wuninitialized).
[[gnu::target("avx512f")]] inline float lane_sum(__m512 v) noexcept {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0.0f;
  for (float x : lanes) sum += x;
  return sum;
}

// ROWS rows of A against COLS rows of W at a time: ROWS x COLS accumulators
// and ROWS + COLS loaded vectors stay within the 32 vector registers.
template <int ROWS, int COLS>
[[gnu::target("avx512f")]] void block(int64_t j0, int64_t n_rows, int64_t k, float alpha, const float* a, int64_t lda,
                                      const float* w, int64_t ldw, float beta, float* c, int64_t ldc) noexcept {
  __m512 acc[ROWS][COLS];
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < COLS; ++j) acc[i][j] = _mm512_setzero_ps();
  const float* wr[COLS];
  for (int j = 0; j < COLS; ++j) wr[j] = w + (j0 + j) * ldw;
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    __m512 x[ROWS];
    for (int i = 0; i < ROWS; ++i) x[i] = _mm512_loadu_ps(a + i * lda + kk);
    for (int j = 0; j < COLS; ++j) {
      // The next block's weight rows, a row length ahead: each row is read once,
      // so the lines must be in flight before the block reaches them.
      if (j0 + COLS + j < n_rows) _mm_prefetch(reinterpret_cast<const char*>(wr[j] + COLS * ldw + kk), _MM_HINT_T0);
      const __m512 v = _mm512_loadu_ps(wr[j] + kk);
      for (int i = 0; i < ROWS; ++i) acc[i][j] = _mm512_fmadd_ps(x[i], v, acc[i][j]);
    }
  }
  if (kk < k) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (k - kk)) - 1u);
    __m512 x[ROWS];
    for (int i = 0; i < ROWS; ++i) x[i] = _mm512_maskz_loadu_ps(tail, a + i * lda + kk);
    for (int j = 0; j < COLS; ++j) {
      const __m512 v = _mm512_maskz_loadu_ps(tail, wr[j] + kk);
      for (int i = 0; i < ROWS; ++i) acc[i][j] = _mm512_fmadd_ps(x[i], v, acc[i][j]);
    }
  }
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < COLS; ++j) {
      float* out = c + i * ldc + j0 + j;
      const float dot = alpha * lane_sum(acc[i][j]);
      *out = beta == 0.0f ? dot : dot + beta * *out;
    }
}

template <int ROWS>
[[gnu::target("avx512f")]] void rows(int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* w,
                                     int64_t ldw, float beta, float* c, int64_t ldc) noexcept {
  constexpr int kCols = ROWS <= 4 ? 4 : 2;
  int64_t j = 0;
  for (; j + kCols <= n; j += kCols) block<ROWS, kCols>(j, n, k, alpha, a, lda, w, ldw, beta, c, ldc);
  for (; j < n; ++j) block<ROWS, 1>(j, n, k, alpha, a, lda, w, ldw, beta, c, ldc);
}

}  // namespace

bool small_gemm_available() noexcept {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

void small_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* w,
                int64_t ldw, float beta, float* c, int64_t ldc) noexcept {
  switch (m) {
    case 1: return rows<1>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 2: return rows<2>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 3: return rows<3>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 4: return rows<4>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 5: return rows<5>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 6: return rows<6>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 7: return rows<7>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    case 8: return rows<8>(n, k, alpha, a, lda, w, ldw, beta, c, ldc);
    default: return;
  }
}

}  // namespace kiln::cpu
