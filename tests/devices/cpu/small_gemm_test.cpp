// small_gemm (a few rows against a weight stored n x k) and gemm<float>, which
// sends such products to it, against a double-precision reference: every row
// count it takes, widths and depths around its vector and column blocks,
// strided rows, alpha/beta, and beta == 0 ignoring NaNs in C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "devices/cpu/gemm.h"
#include "devices/cpu/small_gemm.h"

namespace kiln::cpu {
namespace {

struct Problem {
  int64_t m, n, k, lda, ldw, ldc;
  std::vector<float> a, w, c;
};

Problem make(int64_t m, int64_t n, int64_t k, int64_t pad, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Problem p{m, n, k, k + pad, k + 2 * pad, n + pad, {}, {}, {}};
  p.a.resize(static_cast<size_t>(m * p.lda));
  p.w.resize(static_cast<size_t>(n * p.ldw));
  p.c.resize(static_cast<size_t>(m * p.ldc));
  for (float& v : p.a) v = u(rng);
  for (float& v : p.w) v = u(rng);
  for (float& v : p.c) v = u(rng);
  return p;
}

// The expected C (only the m x n block; padding must stay as it was).
std::vector<double> reference(const Problem& p, float alpha, float beta) {
  std::vector<double> out(p.c.begin(), p.c.end());
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double dot = 0;
      for (int64_t q = 0; q < p.k; ++q)
        dot += static_cast<double>(p.a[i * p.lda + q]) * static_cast<double>(p.w[j * p.ldw + q]);
      const double old = beta == 0.0f ? 0.0 : static_cast<double>(p.c[i * p.ldc + j]);
      out[i * p.ldc + j] = alpha * dot + beta * old;
    }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, int64_t k) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = 1e-5 * static_cast<double>(k) + 1e-6;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << "element " << i;
}

TEST(SmallGemm, MatchesReferenceAcrossShapes) {
  if (!small_gemm_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  uint32_t seed = 1;
  for (int64_t m = 1; m <= kSmallGemmMaxRows; ++m)
    for (int64_t n : {1, 2, 3, 5, 17, 40})
      for (int64_t k : {1, 7, 16, 17, 33, 384})
        for (int64_t pad : {0, 3}) {
          Problem p = make(m, n, k, pad, seed++);
          const float alpha = pad ? 0.5f : 1.0f, beta = pad ? 2.0f : 0.0f;
          const std::vector<double> want = reference(p, alpha, beta);
          small_gemm(m, n, k, alpha, p.a.data(), p.lda, p.w.data(), p.ldw, beta, p.c.data(), p.ldc);
          SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k << " pad " << pad);
          expect_close(p.c, want, k);
        }
}

TEST(SmallGemm, BetaZeroIgnoresNaNsInC) {
  if (!small_gemm_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  Problem p = make(4, 9, 20, 0, 7);
  for (float& v : p.c) v = std::numeric_limits<float>::quiet_NaN();
  const std::vector<double> want = reference(p, 1.0f, 0.0f);
  small_gemm(4, 9, 20, 1.0f, p.a.data(), p.lda, p.w.data(), p.ldw, 0.0f, p.c.data(), p.ldc);
  expect_close(p.c, want, 20);
}

// Through gemm<float>: A row-major, B the transpose of a stored n x k weight.
TEST(SmallGemm, GemmSendsFewRowLinearProductsThroughIt) {
  for (int64_t m : {2, 5, 8, 9}) {
    Problem p = make(m, 70, 48, 1, static_cast<uint32_t>(100 + m));
    const std::vector<double> want = reference(p, 1.0f, 1.0f);
    MatrixView<const float> a{p.a.data(), m, p.k, p.lda, 1};
    MatrixView<const float> b{p.w.data(), p.k, p.n, 1, p.ldw};
    MatrixView<float> c{p.c.data(), m, p.n, p.ldc, 1};
    ASSERT_EQ(gemm<float>(a, b, c, 1.0f, 1.0f), Error::Ok);
    SCOPED_TRACE(testing::Message() << "m " << m);
    expect_close(p.c, want, p.k);
  }
}

}  // namespace
}  // namespace kiln::cpu
