// packed_gemm (B packed into 32-column panels, A read in place) against a
// double-precision reference: row counts around its 12-row tiles, column
// counts around its panels (partial last panels), depths around its 256-row
// passes, strided A and C, a bias or none, column starts at a later panel,
// both storage orders of B for pack_b, and C's old values (NaN) never read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "devices/cpu/packed_gemm.h"

namespace kiln::cpu {
namespace {

struct Case {
  int64_t m, n, k;
};

void check(const Case& t, bool b_column_major, bool with_bias, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t lda = t.k + 3, ldc = t.n + 5;
  std::vector<float> a(static_cast<size_t>(t.m * lda)), b(static_cast<size_t>(t.k * t.n)), bias(t.n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : bias) v = u(rng);
  // B element (l, j): row-major k x n, or stored n x k (a weight) read as its transpose.
  const int64_t row_stride = b_column_major ? 1 : t.n, col_stride = b_column_major ? t.k : 1;
  std::vector<float> packed(static_cast<size_t>(packed_b_floats(t.k, t.n)), std::nanf(""));
  pack_b(b.data(), t.k, t.n, row_stride, col_stride, packed.data());
  std::vector<float> c(static_cast<size_t>(std::max<int64_t>(t.m, 1) * ldc),
                       std::numeric_limits<float>::quiet_NaN());
  packed_gemm(t.m, t.n, t.k, a.data(), lda, packed.data(), with_bias ? bias.data() : nullptr, c.data(), ldc);
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      double want = with_bias ? bias[j] : 0.0;
      for (int64_t l = 0; l < t.k; ++l)
        want += static_cast<double>(a[i * lda + l]) * b[l * row_stride + j * col_stride];
      ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * static_cast<double>(t.k + 1))
          << "m " << t.m << " n " << t.n << " k " << t.k << " at (" << i << ", " << j << ")";
    }
    for (int64_t j = t.n; j < ldc; ++j) ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "wrote past column n";
  }
}

TEST(PackedGemm, MatchesReferenceAcrossShapes) {
  if (!packed_gemm_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  uint32_t seed = 1;
  for (int64_t m : {1, 5, 11, 12, 13, 24, 31})
    for (int64_t n : {1, 7, 16, 17, 31, 32, 33, 64, 70})
      for (int64_t k : {1, 3, 64, 255, 256, 257, 600}) {
        check({m, n, k}, /*b_column_major=*/(seed & 1) != 0, /*with_bias=*/(seed & 2) != 0, seed);
        ++seed;
      }
}

TEST(PackedGemm, BothStorageOrdersOfBPackAlike) {
  if (!packed_gemm_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  for (bool column_major : {false, true})
    for (bool bias : {false, true}) check({13, 45, 300}, column_major, bias, 99);
}

TEST(PackedGemm, StartsAtALaterPanel) {
  if (!packed_gemm_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  const int64_t m = 9, n = 80, k = 40, j0 = 32, cols = 40;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), bias(n), c(m * cols);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : bias) v = u(rng);
  std::vector<float> packed(packed_b_floats(k, n));
  pack_b(b.data(), k, n, n, 1, packed.data());
  packed_gemm(m, cols, k, a.data(), k, packed.data() + j0 * k, bias.data() + j0, c.data(), cols);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double want = bias[j0 + j];
      for (int64_t l = 0; l < k; ++l) want += static_cast<double>(a[i * k + l]) * b[l * n + j0 + j];
      ASSERT_NEAR(c[i * cols + j], want, 1e-4) << i << ", " << j;
    }
}

TEST(PackedGemm, EmptyDepthGivesTheBias) {
  if (!packed_gemm_available()) GTEST_SKIP() << "this CPU has no AVX-512F";
  std::vector<float> bias{1.5f, -2.0f, 3.0f}, c(6, std::nanf(""));
  packed_gemm(2, 3, 0, nullptr, 0, nullptr, bias.data(), c.data(), 3);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(c[i * 3 + j], bias[j]);
  packed_gemm(1, 3, 0, nullptr, 0, nullptr, nullptr, c.data(), 3);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(c[j], 0.0f);
}

}  // namespace
}  // namespace kiln::cpu
