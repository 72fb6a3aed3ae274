// CPU fallback ops against naive reference loops written here, independently
// of the BLAS/im2col paths under test (double accumulation, direct formulas).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devices/cpu/openmp_threads.h"
#include "shims/cpu/cpu_shims.h"
#include "core/half_float.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/softmax_row.h"
#include "kiln/error.h"

namespace {

constexpr int32_t kF32 = 6, kF64 = 7, kBF16 = 15, kF16 = 5, kBool = 11;

struct Handle {
  AtenTensorHandle h = nullptr;
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { aoti_torch_delete_tensor_object(h); }
  AtenTensorHandle* out() { return &h; }
  operator AtenTensorHandle() const { return h; }
};

// Deterministic values in [-1, 1).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((s >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
  }
};

// A tensor with explicit strides holding `logical` values (row-major order);
// values are rounded to the dtype, and `logical` is updated to what is stored.
void make(Handle& t, std::vector<float>& logical, const std::vector<int64_t>& sizes,
          const std::vector<int64_t>& strides, int32_t dtype) {
  ASSERT_EQ(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dtype, 0, 0,
                                     t.out()),
            0)
      << kiln::last_error_message();
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(t, &p), 0);
  std::vector<int64_t> idx(sizes.size(), 0);
  for (size_t k = 0; k < logical.size(); ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * strides[d];
    float v = logical[k];
    if (dtype == kF32) {
      static_cast<float*>(p)[off] = v;
    } else if (dtype == kF64) {
      static_cast<double*>(p)[off] = v;
    } else if (dtype == kBF16) {
      const uint16_t b = kiln::float_to_bf16(v);
      static_cast<uint16_t*>(p)[off] = b;
      logical[k] = kiln::bf16_to_float(b);
    } else if (dtype == kF16) {
      const uint16_t b = kiln::float_to_half(v);
      static_cast<uint16_t*>(p)[off] = b;
      logical[k] = kiln::half_to_float(b);
    } else if (dtype == kBool) {
      static_cast<uint8_t*>(p)[off] = v != 0.0f;
    }
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<float> random_values(size_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = r.next();
  return v;
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = acc;
    acc *= sizes[i];
  }
  return s;
}

// Reads a tensor back in row-major logical order as floats (any strides).
std::vector<float> read(AtenTensorHandle t) {
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0;
  void* p = nullptr;
  EXPECT_EQ(aoti_torch_get_dim(t, &dim), 0);
  EXPECT_EQ(aoti_torch_get_sizes(t, &sizes), 0);
  EXPECT_EQ(aoti_torch_get_strides(t, &strides), 0);
  EXPECT_EQ(aoti_torch_get_dtype(t, &dtype), 0);
  EXPECT_EQ(aoti_torch_get_data_ptr(t, &p), 0);
  int64_t n = 1;
  for (int64_t d = 0; d < dim; ++d) n *= sizes[d];
  std::vector<float> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(static_cast<size_t>(dim), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < dim; ++d) off += idx[d] * strides[d];
    if (dtype == kF32) out[k] = static_cast<float*>(p)[off];
    if (dtype == kF64) out[k] = static_cast<float>(static_cast<double*>(p)[off]);
    if (dtype == kBF16) out[k] = kiln::bf16_to_float(static_cast<uint16_t*>(p)[off]);
    if (dtype == kF16) out[k] = kiln::half_to_float(static_cast<uint16_t*>(p)[off]);
    for (int64_t d = dim; d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rtol * std::max(1.0, scale)) << what << " at " << i;
}

// ---------------------------------------------------------------- mm / addmm / bmm

std::vector<double> ref_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t bs, int64_t m,
                               int64_t k, int64_t n) {
  std::vector<double> c(static_cast<size_t>(bs * m * n), 0.0);
  for (int64_t z = 0; z < bs; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += double(a[(z * m + i) * k + p]) * b[(z * k + p) * n + j];
        c[(z * m + i) * n + j] = acc;
      }
  return c;
}

struct MmCase {
  bool a_t, b_t, out_t;
  int32_t dtype;
};

TEST(CpuMm, LayoutsAndDtypes) {
  const int64_t m = 7, k = 5, n = 6;
  const MmCase cases[] = {{false, false, false, kF32}, {true, false, false, kF32}, {false, true, false, kF32},
                          {true, true, true, kF32},    {false, false, true, kF64}, {true, false, false, kBF16},
                          {false, true, false, kF16}};
  for (const auto& c : cases) {
    auto av = random_values(m * k, 1), bv = random_values(k * n, 2);
    Handle a, b, out;
    make(a, av, {m, k}, c.a_t ? std::vector<int64_t>{1, m} : std::vector<int64_t>{k, 1}, c.dtype);
    make(b, bv, {k, n}, c.b_t ? std::vector<int64_t>{1, k} : std::vector<int64_t>{n, 1}, c.dtype);
    std::vector<float> ov(m * n, std::numeric_limits<float>::quiet_NaN());
    make(out, ov, {m, n}, c.out_t ? std::vector<int64_t>{1, m} : std::vector<int64_t>{n, 1}, c.dtype);
    ASSERT_EQ(aoti_torch_cpu_mm_out(out, a, b), 0) << kiln::last_error_message();
    const double tol = (c.dtype == kBF16 || c.dtype == kF16) ? 2e-2 : 1e-5;
    expect_close(read(out), ref_matmul(av, bv, 1, m, k, n), tol,
                 "mm dtype " + std::to_string(c.dtype) + " at=" + std::to_string(c.a_t));
  }
}

// One-row and one-column products go to GEMV (gemm.cpp): every layout of the
// matrix operand and of the vector, a C whose NaNs beta == 0 must overwrite,
// a strided output column, float64, and addmm's beta.
TEST(CpuMm, MatrixVectorProductsInEveryLayout) {
  struct Case {
    int64_t m, k, n;
    bool a_t, b_t;
    int32_t dtype;
  };
  const Case cases[] = {{1, 300, 70, false, false, kF32}, {1, 300, 70, false, true, kF32},
                        {1, 300, 70, true, false, kF32},  {1, 300, 70, true, true, kF32},
                        {70, 300, 1, false, false, kF32}, {70, 300, 1, true, false, kF32},
                        {70, 300, 1, false, true, kF32},  {70, 300, 1, true, true, kF32},
                        {1, 64, 1, false, false, kF32},   {1, 300, 70, false, true, kF64},
                        {70, 300, 1, true, false, kF64}};
  for (const Case& c : cases) {
    std::string what = std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
    if (c.a_t) what += " a^T";
    if (c.b_t) what += " b^T";
    what += " dtype " + std::to_string(c.dtype);
    auto av = random_values(c.m * c.k, 81), bv = random_values(c.k * c.n, 82);
    Handle a, b, out;
    make(a, av, {c.m, c.k}, c.a_t ? std::vector<int64_t>{1, c.m} : std::vector<int64_t>{c.k, 1}, c.dtype);
    make(b, bv, {c.k, c.n}, c.b_t ? std::vector<int64_t>{1, c.k} : std::vector<int64_t>{c.n, 1}, c.dtype);
    std::vector<float> ov(c.m * c.n, std::numeric_limits<float>::quiet_NaN());
    // A one-column output is read with a row stride of 3: GEMV's incy.
    make(out, ov, {c.m, c.n}, c.n == 1 ? std::vector<int64_t>{3, 1} : std::vector<int64_t>{c.n, 1}, c.dtype);
    ASSERT_EQ(aoti_torch_cpu_mm_out(out, a, b), 0) << kiln::last_error_message();
    expect_close(read(out), ref_matmul(av, bv, 1, c.m, c.k, c.n), 1e-5, "mm " + what);
  }
  // addmm on a one-row product: out = beta * bias + alpha * x @ W^T.
  for (double beta : {0.0, 0.5}) {
    const int64_t k = 96, n = 40;
    auto xv = random_values(k, 83), wv = random_values(n * k, 84), bias = random_values(n, 85);
    Handle x, wt, bt, out;
    make(x, xv, {1, k}, {k, 1}, kF32);
    make(wt, wv, {k, n}, {1, k}, kF32);  // wv holds the logical [k, n]; stored as W [n, k] is, transposed
    make(bt, bias, {n}, {1}, kF32);
    std::vector<float> ov(n, std::numeric_limits<float>::quiet_NaN());
    make(out, ov, {1, n}, {n, 1}, kF32);
    ASSERT_EQ(aoti_torch_cpu_addmm_out(out, bt, x, wt, beta, 1.5), 0) << kiln::last_error_message();
    auto want = ref_matmul(xv, wv, 1, 1, k, n);
    for (int64_t j = 0; j < n; ++j) want[j] = 1.5 * want[j] + beta * bias[j];
    expect_close(read(out), want, 1e-5, "addmm one row, beta " + std::to_string(beta));
  }
}

TEST(CpuMm, ScatteredOperandsAreHandled) {
  // Neither rows nor columns unit-stride: a is every other element of a larger buffer.
  const int64_t m = 4, k = 3, n = 5;
  auto av = random_values(m * k, 3), bv = random_values(k * n, 4);
  Handle a, b, out;
  make(a, av, {m, k}, {2 * k * 2, 2}, kF32);
  make(b, bv, {k, n}, {n, 1}, kF32);
  std::vector<float> ov(m * n, 0.0f);
  make(out, ov, {m, n}, {2 * n, 2}, kF32);  // scattered output too
  ASSERT_EQ(aoti_torch_cpu_mm_out(out, a, b), 0) << kiln::last_error_message();
  expect_close(read(out), ref_matmul(av, bv, 1, m, k, n), 1e-5, "scattered mm");
}

TEST(CpuAddmm, BetaAlphaAndBroadcastBias) {
  const int64_t m = 6, k = 8, n = 5;
  const double betas[] = {0.0, 1.0, 0.5};
  for (int32_t dtype : {kF32, kBF16}) {
    for (double beta : betas) {
      const double alpha = 1.5;
      auto xv = random_values(m * k, 5), wv = random_values(n * k, 6), bias = random_values(n, 7);
      Handle x, wt, bt, out;
      make(x, xv, {m, k}, {k, 1}, dtype);
      // linear(): mat2 is weight.t(), a transposed view of a [n, k] weight.
      make(wt, wv, {k, n}, {1, k}, dtype);
      make(bt, bias, {n}, {1}, dtype);
      std::vector<float> ov(m * n, std::numeric_limits<float>::quiet_NaN());
      make(out, ov, {m, n}, {n, 1}, dtype);
      ASSERT_EQ(aoti_torch_cpu_addmm_out(out, bt, x, wt, beta, alpha), 0) << kiln::last_error_message();
      auto want = ref_matmul(xv, wv, 1, m, k, n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) want[i * n + j] = alpha * want[i * n + j] + beta * bias[j];
      expect_close(read(out), want, dtype == kF32 ? 1e-5 : 2e-2, "addmm beta " + std::to_string(beta));
    }
  }
}

TEST(CpuAddmm, InPlaceFullSelf) {
  const int64_t m = 3, k = 4, n = 2;
  auto av = random_values(m * k, 8), bv = random_values(k * n, 9), cv = random_values(m * n, 10);
  Handle a, b, c;
  make(a, av, {m, k}, {k, 1}, kF32);
  make(b, bv, {k, n}, {n, 1}, kF32);
  make(c, cv, {m, n}, {n, 1}, kF32);
  ASSERT_EQ(aoti_torch_cpu_addmm_out(c, c, a, b, 1.0, 1.0), 0) << kiln::last_error_message();
  auto want = ref_matmul(av, bv, 1, m, k, n);
  for (size_t i = 0; i < want.size(); ++i) want[i] += cv[i];
  expect_close(read(c), want, 1e-5, "addmm in place");
}

TEST(CpuBmm, BatchesAndTransposedOperands) {
  const int64_t bs = 3, m = 4, k = 6, n = 5;
  for (int32_t dtype : {kF32, kBF16}) {
    auto av = random_values(bs * m * k, 11), bv = random_values(bs * k * n, 12);
    Handle a, b, out;
    make(a, av, {bs, m, k}, {m * k, k, 1}, dtype);
    make(b, bv, {bs, k, n}, {k * n, 1, k}, dtype);  // each matrix stored transposed
    std::vector<float> ov(bs * m * n, 0.0f);
    make(out, ov, {bs, m, n}, {m * n, n, 1}, dtype);
    ASSERT_EQ(aoti_torch_cpu_bmm_out(out, a, b), 0) << kiln::last_error_message();
    expect_close(read(out), ref_matmul(av, bv, bs, m, k, n), dtype == kF32 ? 1e-5 : 2e-2, "bmm");
  }
}

// ---------------------------------------------------------------- rms_norm_linear

// linear(rms_norm(x) * (g + offset), w) in double, with the normalised row
// rounded to bfloat16 first when `bf16` (as the unfused graph does).
std::vector<double> ref_rms_norm_linear(const std::vector<float>& x, const std::vector<float>& g,
                                        const std::vector<float>& w, int64_t rows, int64_t k, int64_t n, double eps,
                                        double offset, bool bf16) {
  std::vector<double> out(static_cast<size_t>(rows * n));
  std::vector<float> normed(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < k; ++i) ss += double(x[r * k + i]) * x[r * k + i];
    const double inv = 1.0 / std::sqrt(ss / k + eps);
    for (int64_t i = 0; i < k; ++i) {
      const auto v = static_cast<float>(x[r * k + i] * inv * (g[i] + offset));
      normed[i] = bf16 ? kiln::bf16_to_float(kiln::float_to_bf16(v)) : v;
    }
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += double(normed[i]) * w[j * k + i];
      out[r * n + j] = acc;
    }
  }
  return out;
}

// Kiln's fused op (norm_linear_ops.cpp): 3-d x, a transposed-layout weight,
// Gemma's unit offset and none, float32 and bfloat16.
TEST(CpuRmsNormLinear, MatchesReference) {
  const int64_t b = 2, t = 3, k = 40, n = 24;
  for (const int32_t dtype : {kF32, kBF16}) {
    for (const double offset : {0.0, 1.0}) {
      auto xv = random_values(b * t * k, 1), gv = random_values(k, 2), wv = random_values(n * k, 3);
      Handle x, g, w;
      make(x, xv, {b, t, k}, contiguous({b, t, k}), dtype);
      make(g, gv, {k}, {1}, dtype);
      make(w, wv, {n, k}, {1, n}, dtype);  // column-major [n, k]: read through its strides
      Handle out;
      ASSERT_EQ(aoti_torch_cpu_rms_norm_linear(x, g, w, 1e-6, offset, out.out()), 0) << kiln::last_error_message();
      int64_t* sizes = nullptr;
      ASSERT_EQ(aoti_torch_get_sizes(out, &sizes), 0);
      EXPECT_EQ(std::vector<int64_t>(sizes, sizes + 3), (std::vector<int64_t>{b, t, n}));
      std::string what = "rms_norm_linear dtype ";
      what += std::to_string(dtype);
      expect_close(read(out), ref_rms_norm_linear(xv, gv, wv, b * t, k, n, 1e-6, offset, dtype == kBF16),
                   dtype == kBF16 ? 2e-2 : 1e-5, what);
    }
  }
}

TEST(CpuRmsNormLinear, BadArgumentsFail) {
  auto v = random_values(64, 1);
  Handle x, g, w, x64, out;
  make(x, v, {2, 8}, {8, 1}, kF32);
  make(g, v, {7}, {1}, kF32);
  make(w, v, {4, 8}, {8, 1}, kF32);
  EXPECT_EQ(aoti_torch_cpu_rms_norm_linear(x, g, w, 1e-6, 0.0, out.out()), 1);
  EXPECT_NE(kiln::last_error_message().find("the last dim of x (8) must match norm_weight"), std::string::npos)
      << kiln::last_error_message();
  make(x64, v, {2, 8}, {8, 1}, kF64);
  EXPECT_EQ(aoti_torch_cpu_rms_norm_linear(x64, g, w, 1e-6, 0.0, out.out()), 1);
  EXPECT_NE(kiln::last_error_message().find("dtype float64 is not supported"), std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_cpu_rms_norm_linear(x, g, w, 1e-6, 0.0, nullptr), 1);
}

TEST(CpuMm, BadArgumentsFail) {
  auto v = random_values(12, 1);
  Handle a, b, out, out_bf;
  make(a, v, {3, 4}, {4, 1}, kF32);
  make(b, v, {3, 4}, {4, 1}, kF32);
  auto o = random_values(9, 1);
  make(out, o, {3, 3}, {3, 1}, kF32);
  EXPECT_EQ(aoti_torch_cpu_mm_out(out, a, b), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_cpu_mm_out: shape mismatch: self [3, 4] @ mat2 [3, 4]"),
            std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_cpu_mm_out(out, nullptr, b), 1);
  EXPECT_NE(kiln::last_error_message().find("'self' is a null tensor handle"), std::string::npos);
  auto ob = random_values(16, 1);
  make(out_bf, ob, {4, 4}, {4, 1}, kBF16);
  Handle bt;
  make(bt, v, {4, 3}, {3, 1}, kF32);
  Handle a4;
  make(a4, ob, {4, 4}, {4, 1}, kF32);
  EXPECT_EQ(aoti_torch_cpu_mm_out(out_bf, a4, a4), 1);
  EXPECT_NE(kiln::last_error_message().find("dtype float32, expected bfloat16"), std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_cpu_bmm_out(out, a, bt), 1);
  EXPECT_NE(kiln::last_error_message().find("expected 3-d tensors"), std::string::npos);
  Handle bias;
  auto bv = random_values(2, 1);
  make(bias, bv, {2}, {1}, kF32);
  Handle o3;
  auto ov = random_values(9, 1);
  make(o3, ov, {3, 3}, {3, 1}, kF32);
  EXPECT_EQ(aoti_torch_cpu_addmm_out(o3, bias, a, bt, 1.0, 1.0), 1);
  EXPECT_NE(kiln::last_error_message().find("does not broadcast"), std::string::npos);
}

// ---------------------------------------------------------------- convolution

struct Conv {
  int64_t n, cin, cout, groups;
  std::vector<int64_t> in, k, stride, pad, dil, opad;
  bool transposed, bias;
};

// Direct definition: each output element sums input * weight over the
// positions the formula connects (transposed: each input element scatters).
std::vector<double> ref_conv(const Conv& given, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b, std::vector<int64_t>& out_sp) {
  const size_t sd = given.in.size();
  // aten::convolution accepts one value for all spatial dims; expand it here.
  Conv c = given;
  for (auto* v : {&c.stride, &c.pad, &c.dil, &c.opad}) {
    const int64_t fill = v->empty() ? (v == &c.stride || v == &c.dil ? 1 : 0) : (*v)[0];
    if (v->size() != sd) v->assign(sd, fill);
  }
  out_sp.resize(sd);
  for (size_t d = 0; d < sd; ++d) {
    const int64_t span = c.dil[d] * (c.k[d] - 1) + 1;
    out_sp[d] = c.transposed ? (c.in[d] - 1) * c.stride[d] - 2 * c.pad[d] + span + c.opad[d]
                             : (c.in[d] + 2 * c.pad[d] - span) / c.stride[d] + 1;
  }
  // Spatial dims padded to 3 (D, H, W) for the loops; missing leading dims have size 1.
  const size_t lead = 3 - sd;
  auto dim = [&](const std::vector<int64_t>& v, size_t i, int64_t fill) { return i < lead ? fill : v[i - lead]; };
  const int64_t ID = dim(c.in, 0, 1), IH = dim(c.in, 1, 1), IW = dim(c.in, 2, 1);
  const int64_t KD = dim(c.k, 0, 1), KH = dim(c.k, 1, 1), KW = dim(c.k, 2, 1);
  const int64_t OD = dim(out_sp, 0, 1), OH = dim(out_sp, 1, 1), OW = dim(out_sp, 2, 1);
  const int64_t SD = dim(c.stride, 0, 1), SH = dim(c.stride, 1, 1), SW = dim(c.stride, 2, 1);
  const int64_t PD = dim(c.pad, 0, 0), PH = dim(c.pad, 1, 0), PW = dim(c.pad, 2, 0);
  const int64_t DD = dim(c.dil, 0, 1), DH = dim(c.dil, 1, 1), DW = dim(c.dil, 2, 1);
  const int64_t cig = c.cin / c.groups, cog = c.cout / c.groups;
  const int64_t in_plane = ID * IH * IW, out_plane = OD * OH * OW, k_plane = KD * KH * KW;
  std::vector<double> y(static_cast<size_t>(c.n * c.cout * out_plane), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t g = 0; g < c.groups; ++g)
      for (int64_t oc = 0; oc < cog; ++oc)
        for (int64_t ic = 0; ic < cig; ++ic)
          for (int64_t kd = 0; kd < KD; ++kd)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ci = g * cig + ic, co = g * cog + oc, tap = (kd * KH + kh) * KW + kw;
                const double wv =
                    c.transposed ? w[(ci * cog + oc) * k_plane + tap] : w[(co * cig + ic) * k_plane + tap];
                // Regular: output (o*) meets input o * stride - pad + k * dil; transposed: the reverse.
                const int64_t AD = c.transposed ? ID : OD, AH = c.transposed ? IH : OH, AW = c.transposed ? IW : OW;
                for (int64_t ad = 0; ad < AD; ++ad)
                  for (int64_t ah = 0; ah < AH; ++ah)
                    for (int64_t aw = 0; aw < AW; ++aw) {
                      const int64_t bd = ad * SD - PD + kd * DD, bh = ah * SH - PH + kh * DH,
                                    bw = aw * SW - PW + kw * DW;
                      const int64_t BD = c.transposed ? OD : ID, BH = c.transposed ? OH : IH,
                                    BW = c.transposed ? OW : IW;
                      if (bd < 0 || bd >= BD || bh < 0 || bh >= BH || bw < 0 || bw >= BW) continue;
                      const int64_t a_at = (ad * AH + ah) * AW + aw, b_at = (bd * BH + bh) * BW + bw;
                      const int64_t out_at = c.transposed ? b_at : a_at, in_at = c.transposed ? a_at : b_at;
                      y[(n * c.cout + co) * out_plane + out_at] += wv * x[(n * c.cin + ci) * in_plane + in_at];
                    }
              }
  if (c.bias)
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t co = 0; co < c.cout; ++co)
        for (int64_t p = 0; p < out_plane; ++p) y[(n * c.cout + co) * out_plane + p] += b[co];
  return y;
}

// How a test lays out a convolution operand in memory.
enum class Layout { Contiguous, ChannelsLast, PaddedChannels };

std::vector<int64_t> layout_strides(const std::vector<int64_t>& sizes, Layout layout) {
  if (layout == Layout::ChannelsLast) {  // NHWC / NDHWC: channels innermost, then the spatial dims in order
    std::vector<int64_t> st(sizes.size());
    int64_t acc = 1;
    st[1] = acc;
    acc *= sizes[1];
    for (size_t d = sizes.size(); d-- > 2;) {
      st[d] = acc;
      acc *= sizes[d];
    }
    st[0] = acc;
    return st;
  }
  if (layout == Layout::PaddedChannels) {  // a slice of a tensor with 3 more channels: no single stride walks it
    auto padded = sizes;
    padded[1] += 3;
    return contiguous(padded);
  }
  return contiguous(sizes);
}

void run_conv_layouts(const Conv& c, int32_t dtype, Layout x_layout, Layout w_layout, const std::string& name) {
  std::vector<int64_t> xs{c.n, c.cin}, ws;
  for (auto v : c.in) xs.push_back(v);
  if (c.transposed) {
    ws = {c.cin, c.cout / c.groups};
  } else {
    ws = {c.cout, c.cin / c.groups};
  }
  for (auto v : c.k) ws.push_back(v);
  int64_t xn = 1, wn = 1;
  for (auto v : xs) xn *= v;
  for (auto v : ws) wn *= v;
  auto xv = random_values(xn, 21), wv = random_values(wn, 22), bv = random_values(c.cout, 23);
  Handle x, w, b, out;
  make(x, xv, xs, layout_strides(xs, x_layout), dtype);
  make(w, wv, ws, layout_strides(ws, w_layout), dtype);
  if (c.bias) make(b, bv, {c.cout}, {1}, dtype);
  AtenTensorHandle bias_h = c.bias ? b.h : nullptr;
  ASSERT_EQ(aoti_torch_cpu_convolution(x, w, c.bias ? &bias_h : nullptr, c.stride.data(),
                                       static_cast<int64_t>(c.stride.size()), c.pad.data(),
                                       static_cast<int64_t>(c.pad.size()), c.dil.data(),
                                       static_cast<int64_t>(c.dil.size()), c.transposed, c.opad.data(),
                                       static_cast<int64_t>(c.opad.size()), c.groups, out.out()),
            0)
      << name << ": " << kiln::last_error_message();
  std::vector<int64_t> osp;
  const auto want = ref_conv(c, xv, wv, bv, osp);
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  ASSERT_EQ(aoti_torch_get_dim(out, &dim), 0);
  ASSERT_EQ(aoti_torch_get_sizes(out, &sizes), 0);
  ASSERT_EQ(aoti_torch_get_strides(out, &strides), 0);
  std::vector<int64_t> expect_sizes{c.n, c.cout};
  for (auto v : osp) expect_sizes.push_back(v);
  ASSERT_EQ(std::vector<int64_t>(sizes, sizes + dim), expect_sizes) << name;
  // ATen's rule: a channels-last input or weight (4-d / 5-d) gives a channels-last output.
  const bool channels_last = xs.size() >= 4 && (x_layout == Layout::ChannelsLast || w_layout == Layout::ChannelsLast);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + dim),
            layout_strides(expect_sizes, channels_last ? Layout::ChannelsLast : Layout::Contiguous))
      << name;
  expect_close(read(out), want, dtype == kF32 ? 1e-5 : 2e-2, name);
}

void run_conv_case(const Conv& c, int32_t dtype, bool channels_last_input, const std::string& name) {
  run_conv_layouts(c, dtype, channels_last_input ? Layout::ChannelsLast : Layout::Contiguous, Layout::Contiguous,
                   name);
}

TEST(CpuConvolution, Conv2dVariants) {
  run_conv_case({2, 4, 6, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32, false, "basic 3x3 pad 1");
  run_conv_case({1, 4, 6, 1, {9, 8}, {3, 2}, {2, 3}, {1, 0}, {1, 1}, {}, false, false}, kF32, false, "stride");
  run_conv_case({1, 3, 4, 1, {9, 9}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {}, false, true}, kF32, false, "dilation");
  run_conv_case({2, 8, 6, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32, false, "groups 2");
  run_conv_case({1, 6, 6, 6, {6, 7}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32, false, "depthwise");
  run_conv_case({1, 4, 8, 4, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, false}, kF32, false,
                "depthwise multiplier 2");
  run_conv_case({2, 5, 3, 1, {4, 6}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {}, false, true}, kF32, false, "pointwise 1x1");
  run_conv_case({1, 4, 6, 1, {7, 6}, {3, 3}, {1}, {1}, {1}, {}, false, true}, kF32, false, "single-value params");
  run_conv_case({2, 4, 6, 1, {5, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32, true, "channels-last");
  run_conv_case({2, 4, 6, 2, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kBF16, false, "bf16");
}

TEST(CpuConvolution, Conv1dAndTransposed) {
  run_conv_case({2, 3, 5, 1, {11}, {3}, {2}, {1}, {1}, {}, false, true}, kF32, false, "conv1d stride 2");
  run_conv_case({1, 4, 4, 4, {10}, {5}, {1}, {2}, {2}, {}, false, true}, kF32, false, "conv1d depthwise dilated");
  run_conv_case({2, 4, 6, 1, {5, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, true}, kF32, false,
                "transposed stride 2 output_padding 1");
  run_conv_case({1, 6, 4, 2, {4, 5}, {2, 3}, {1, 2}, {0, 1}, {2, 1}, {0, 1}, true, false}, kF32, false,
                "transposed groups dilation");
  run_conv_case({2, 3, 4, 1, {7}, {4}, {3}, {1}, {1}, {2}, true, true}, kF32, false, "transposed conv1d");
  run_conv_case({1, 4, 2, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, true}, kBF16, false,
                "transposed bf16");
}

TEST(CpuConvolution, OperandLayoutsAreReadInPlace) {
  // Every input layout against every weight layout, on a 3x3 convolution (patches gathered), a 1x1 one
  // (the input is the patch matrix when one stride walks its pixels), a strided 1x1 one and a depthwise one.
  const std::vector<std::pair<Conv, std::string>> convs = {
      {{2, 6, 8, 2, {7, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, "3x3 groups 2"},
      {{2, 6, 5, 1, {4, 6}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {}, false, true}, "1x1"},
      {{1, 6, 4, 1, {7, 6}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, {}, false, false}, "1x1 stride 2"},
      {{2, 6, 12, 6, {6, 7}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {}, false, true}, "depthwise x2"},
  };
  const std::vector<std::pair<Layout, std::string>> layouts = {
      {Layout::Contiguous, "contiguous"}, {Layout::ChannelsLast, "channels-last"}, {Layout::PaddedChannels, "padded"}};
  for (const auto& [conv, conv_name] : convs)
    for (const auto& [xl, xl_name] : layouts)
      for (const auto& [wl, wl_name] : layouts)
        run_conv_layouts(conv, kF32, xl, wl, conv_name + ", input " + xl_name + ", weight " + wl_name);
  run_conv_layouts(convs[0].first, kBF16, Layout::ChannelsLast, Layout::ChannelsLast, "3x3 bf16 channels-last");
}

TEST(CpuConvolution, Conv3d) {
  run_conv_layouts({2, 3, 4, 1, {4, 5, 6}, {2, 3, 3}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, {}, false, true}, kF32,
                   Layout::Contiguous, Layout::Contiguous, "conv3d");
  run_conv_layouts({1, 4, 4, 2, {3, 4, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {}, false, false}, kF32,
                   Layout::ChannelsLast, Layout::ChannelsLast, "conv3d channels-last groups 2");
  run_conv_layouts({1, 3, 2, 1, {3, 4, 4}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, true, true}, kF32,
                   Layout::Contiguous, Layout::Contiguous, "transposed conv3d");
}

TEST(CpuConvolution, BadArgumentsFail) {
  auto xv = random_values(2 * 8 * 5 * 5, 1), wv = random_values(4 * 3 * 3 * 3, 2);
  Handle x, w;
  make(x, xv, {2, 8, 5, 5}, contiguous({2, 8, 5, 5}), kF32);
  make(w, wv, {4, 3, 3, 3}, contiguous({4, 3, 3, 3}), kF32);
  const int64_t one[] = {1, 1}, zero[] = {0, 0};
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(aoti_torch_cpu_convolution(x, w, nullptr, one, 2, zero, 2, one, 2, 0, zero, 0, 3, &out), 1);
  EXPECT_NE(kiln::last_error_message().find("aoti_torch_cpu_convolution: groups 3 does not divide input channels 8"),
            std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(aoti_torch_cpu_convolution(x, w, nullptr, one, 2, zero, 2, one, 2, 0, zero, 0, 1, &out), 1);
  EXPECT_NE(kiln::last_error_message().find("input channels"), std::string::npos) << kiln::last_error_message();
  const int64_t bad_stride[] = {0, 1};
  EXPECT_EQ(aoti_torch_cpu_convolution(x, w, nullptr, bad_stride, 2, zero, 2, one, 2, 0, zero, 0, 1, &out), 1);
  EXPECT_EQ(aoti_torch_cpu_convolution(x, nullptr, nullptr, one, 2, zero, 2, one, 2, 0, zero, 0, 1, &out), 1);
  EXPECT_NE(kiln::last_error_message().find("'weight' is a null tensor handle"), std::string::npos);
  const int64_t three[] = {1, 1, 1};
  EXPECT_EQ(aoti_torch_cpu_convolution(x, w, nullptr, three, 3, zero, 2, one, 2, 0, zero, 0, 1, &out), 1);
  EXPECT_NE(kiln::last_error_message().find("stride has 3 values for 2 spatial dims"), std::string::npos)
      << kiln::last_error_message();
  EXPECT_EQ(out, nullptr);
}

// ---------------------------------------------------------------- attention

enum class MaskKind { None, Float, Bool };

// Reference attention with double math; returns output [B,H,L,E] and lse [B,H,L].
void ref_sdpa(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int64_t B,
              int64_t H, int64_t Hkv, int64_t L, int64_t S, int64_t E, bool causal, MaskKind mk,
              const std::vector<float>& mask, const std::vector<int64_t>& mask_sizes, double scale,
              std::vector<double>& out, std::vector<double>& lse) {
  out.assign(static_cast<size_t>(B * H * L * E), 0.0);
  lse.assign(static_cast<size_t>(B * H * L), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h * Hkv / H;
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(static_cast<size_t>(S));
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e)
            dot += double(q[((b * H + h) * L + i) * E + e]) * k[((b * Hkv + hk) * S + j) * E + e];
          s[j] = dot * scale;
          if (mk != MaskKind::None) {
            // mask_sizes is 4-d with 1s on broadcast dims.
            const int64_t mb = mask_sizes[0] == 1 ? 0 : b, mh = mask_sizes[1] == 1 ? 0 : h;
            const int64_t mi = mask_sizes[2] == 1 ? 0 : i;
            const float mval = mask[((mb * mask_sizes[1] + mh) * mask_sizes[2] + mi) * mask_sizes[3] + j];
            if (mk == MaskKind::Float) s[j] += mval;
            if (mk == MaskKind::Bool && mval == 0.0f) s[j] = -INFINITY;
          }
          if (causal && j > i) s[j] = -INFINITY;
        }
        double mx = -INFINITY;
        for (double x : s) mx = std::max(mx, x);
        double sum = 0;
        for (double x : s) sum += std::exp(x - mx);
        lse[(b * H + h) * L + i] = mx + std::log(sum);
        for (int64_t j = 0; j < S; ++j) {
          const double p = std::exp(s[j] - mx) / sum;
          for (int64_t e = 0; e < E; ++e)
            out[((b * H + h) * L + i) * E + e] += p * v[((b * Hkv + hk) * S + j) * E + e];
        }
      }
    }
}

void run_sdpa_case(int64_t B, int64_t H, int64_t Hkv, int64_t L, int64_t S, int64_t E, bool causal, MaskKind mk,
                   std::vector<int64_t> mask_sizes, const double* scale, int32_t dtype, bool q_transposed,
                   const std::string& name) {
  auto qv = random_values(B * H * L * E, 31), kv = random_values(B * Hkv * S * E, 32),
       vv = random_values(B * Hkv * S * E, 33);
  Handle q, k, v, m;
  // q stored as [B, L, H, E] and viewed as [B, H, L, E] when q_transposed (the usual projection layout).
  make(q, qv, {B, H, L, E},
       q_transposed ? std::vector<int64_t>{L * H * E, E, H * E, 1} : contiguous({B, H, L, E}), dtype);
  make(k, kv, {B, Hkv, S, E}, contiguous({B, Hkv, S, E}), dtype);
  make(v, vv, {B, Hkv, S, E}, contiguous({B, Hkv, S, E}), dtype);
  std::vector<float> mv;
  std::vector<int64_t> full_mask_sizes(4 - mask_sizes.size(), 1);
  for (auto s : mask_sizes) full_mask_sizes.push_back(s);
  if (mk != MaskKind::None) {
    int64_t mn = 1;
    for (auto s : mask_sizes) mn *= s;
    mv = random_values(mn, 34);
    if (mk == MaskKind::Bool) {
      for (int64_t t = 0; t < mn; ++t) mv[t] = (mv[t] > -0.5f || t % S == 0) ? 1.0f : 0.0f;  // keep >= 1 per row
    }
    make(m, mv, mask_sizes, contiguous(mask_sizes), mk == MaskKind::Bool ? kBool : dtype);
  }
  AtenTensorHandle mh = m.h;
  Handle out, lse;
  ASSERT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.0, causal, mk == MaskKind::None ? nullptr : &mh, const_cast<double*>(scale), out.out(),
                lse.out()),
            0)
      << name << ": " << kiln::last_error_message();
  std::vector<double> want, want_lse;
  const double sc = scale ? *scale : 1.0 / std::sqrt(double(E));
  ref_sdpa(qv, kv, vv, B, H, Hkv, L, S, E, causal, mk, mv, full_mask_sizes, sc, want, want_lse);
  const double tol = dtype == kF32 ? 1e-5 : 2e-2;
  expect_close(read(out), want, tol, name + " output");
  expect_close(read(lse), want_lse, dtype == kF32 ? 1e-5 : 2e-2, name + " logsumexp");
  int64_t* st = nullptr;
  ASSERT_EQ(aoti_torch_get_strides(out, &st), 0);
  if (q_transposed) {
    EXPECT_EQ(std::vector<int64_t>(st, st + 4), (std::vector<int64_t>{L * H * E, E, H * E, 1})) << name;
  } else {
    EXPECT_EQ(std::vector<int64_t>(st, st + 4), contiguous({B, H, L, E})) << name;
  }
  ASSERT_EQ(aoti_torch_get_strides(lse, &st), 0);
  EXPECT_EQ(std::vector<int64_t>(st, st + 3), (std::vector<int64_t>{L * H, 1, H})) << name;
  int32_t lse_dtype = 0;
  ASSERT_EQ(aoti_torch_get_dtype(lse, &lse_dtype), 0);
  EXPECT_EQ(lse_dtype, kF32);
}

TEST(CpuAttention, MatchesReference) {
  const double half = 0.5;
  run_sdpa_case(2, 3, 3, 5, 7, 8, false, MaskKind::None, {}, nullptr, kF32, false, "plain");
  run_sdpa_case(2, 3, 3, 6, 6, 8, true, MaskKind::None, {}, nullptr, kF32, false, "causal");
  run_sdpa_case(1, 2, 2, 4, 7, 4, true, MaskKind::None, {}, nullptr, kF32, false, "causal L < S (top-left)");
  run_sdpa_case(2, 2, 2, 5, 6, 4, false, MaskKind::Float, {5, 6}, nullptr, kF32, false, "float mask 2-d");
  run_sdpa_case(2, 2, 2, 5, 6, 4, false, MaskKind::Float, {2, 1, 5, 6}, nullptr, kF32, false,
                "float mask per batch");
  run_sdpa_case(2, 2, 2, 5, 6, 4, false, MaskKind::Bool, {1, 2, 5, 6}, nullptr, kF32, false, "bool mask");
  run_sdpa_case(1, 2, 2, 5, 6, 4, true, MaskKind::Float, {1, 1, 1, 6}, &half, kF32, false,
                "scale + causal + key-padding mask");
  run_sdpa_case(2, 4, 2, 5, 6, 8, false, MaskKind::None, {}, nullptr, kF32, true, "GQA with transposed q");
  run_sdpa_case(1, 2, 2, 5, 6, 8, true, MaskKind::None, {}, nullptr, kBF16, false, "bf16 causal");
  // Rows longer than the softmax's 16 vector lanes (its main loop and tail).
  run_sdpa_case(1, 4, 4, 45, 45, 16, true, MaskKind::None, {}, nullptr, kF32, true, "long causal, transposed q");
  run_sdpa_case(2, 2, 1, 33, 50, 8, false, MaskKind::Float, {33, 50}, nullptr, kF32, false, "long float mask, GQA");
  run_sdpa_case(1, 2, 2, 20, 37, 8, false, MaskKind::Bool, {1, 2, 20, 37}, nullptr, kF32, false, "long bool mask");
}

TEST(CpuSoftmax, MatchesDoublePrecisionOverWideRanges) {
  // Scores from -100 to +60 (exp spans far below and above float's normal
  // range after the max is subtracted), every row length from 1 to 70.
  uint32_t seed = 7;
  for (int64_t n = 1; n <= 70; ++n) {
    std::vector<float> row(static_cast<size_t>(n));
    for (auto& x : row) {
      seed = seed * 1664525u + 1013904223u;
      x = -100.0f + 160.0f * static_cast<float>(seed >> 8) / static_cast<float>(1u << 24);
    }
    double mx = -INFINITY;
    for (float x : row) mx = std::max(mx, double(x));
    double sum = 0;
    for (float x : row) sum += std::exp(double(x) - mx);
    std::vector<double> want(row.size());
    for (size_t j = 0; j < row.size(); ++j) want[j] = std::exp(double(row[j]) - mx) / sum;
    const float lse = kiln::cpu::softmax_in_place(row.data(), n);
    EXPECT_NEAR(lse, mx + std::log(sum), 1e-6 * std::abs(mx + std::log(sum))) << "n=" << n;
    for (size_t j = 0; j < row.size(); ++j)
      ASSERT_NEAR(row[j], want[j], 1e-6 * want[j] + 1e-30) << "n=" << n << " j=" << j;
  }
}

TEST(CpuSoftmax, MaskedEntriesGetZeroAndFullyMaskedRowsAreZero) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> row(40, -inf);
  row[3] = 1.0f;
  row[33] = 1.0f;
  EXPECT_FLOAT_EQ(kiln::cpu::softmax_in_place(row.data(), 40), 1.0f + std::log(2.0f));
  for (size_t j = 0; j < row.size(); ++j) EXPECT_EQ(row[j], (j == 3 || j == 33) ? 0.5f : 0.0f) << j;
  std::vector<float> none(20, -inf);
  EXPECT_EQ(kiln::cpu::softmax_in_place(none.data(), 20), -inf);
  for (float x : none) EXPECT_EQ(x, 0.0f);
}

TEST(CpuAttention, BadArgumentsFail) {
  auto qv = random_values(2 * 2 * 3 * 4, 1);
  Handle q, k3;
  make(q, qv, {2, 2, 3, 4}, contiguous({2, 2, 3, 4}), kF32);
  auto kv = random_values(2 * 3 * 3 * 4, 1);
  make(k3, kv, {2, 3, 3, 4}, contiguous({2, 3, 3, 4}), kF32);
  AtenTensorHandle o = nullptr, l = nullptr;
  EXPECT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.1, 0, nullptr, nullptr, &o, &l), 1);
  EXPECT_NE(kiln::last_error_message().find("dropout_p must be 0"), std::string::npos);
  EXPECT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k3, k3, 0.0, 0, nullptr, nullptr, &o, &l),
            1);
  EXPECT_NE(kiln::last_error_message().find("do not divide query heads"), std::string::npos)
      << kiln::last_error_message();
  Handle bad_mask;
  auto mv = random_values(4 * 4, 1);
  make(bad_mask, mv, {4, 4}, {4, 1}, kF32);
  AtenTensorHandle mh = bad_mask.h;
  EXPECT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, 0, &mh, nullptr, &o, &l), 1);
  EXPECT_NE(kiln::last_error_message().find("does not broadcast"), std::string::npos);
  EXPECT_EQ(o, nullptr);
  EXPECT_EQ(l, nullptr);
}

// ---------------------------------------------------------------- threads
//
// A model call publishes its OpenMP runtime and thread count on the calling
// thread (OpenmpThreads::Scope in AotiMethod::execute); here the Scope is made
// directly over libgomp, the runtime model libraries and OpenBLAS are bound to.

using kiln::cpu::OpenmpThreads;

const OpenmpThreads& gomp() {
  static const OpenmpThreads omp = OpenmpThreads::resolve_handle(::dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL));
  return omp;
}

TEST(CpuParallelFor, OutsideAModelCallRunsInline) {
  EXPECT_EQ(kiln::cpu::parallel_threads(), 1);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  ASSERT_EQ(kiln::cpu::parallel_for(10, 1,
                                    [&](int64_t b, int64_t e) {
                                      ranges.emplace_back(b, e);
                                      return kiln::Error::Ok;
                                    }),
            kiln::Error::Ok);
  EXPECT_EQ(ranges, (std::vector<std::pair<int64_t, int64_t>>{{0, 10}}));
}

TEST(CpuParallelFor, SplitsOverTheCallsTeamOnce) {
  ASSERT_TRUE(gomp().can_fork()) << "libgomp.so.1 could not be opened";
  for (int threads : {2, 3}) {
    const OpenmpThreads::Scope scope(gomp(), threads);
    EXPECT_EQ(kiln::cpu::parallel_threads(), threads);
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    std::set<std::thread::id> ids;
    int nested_ranges = 0;
    ASSERT_EQ(kiln::cpu::parallel_for(10, 1,
                                      [&](int64_t b, int64_t e) {
                                        // A nested parallel_for stays on this thread, as one range.
                                        EXPECT_EQ(kiln::cpu::parallel_threads(), 1);
                                        EXPECT_TRUE(kiln::cpu::inside_parallel_region());
                                        int inner = 0;
                                        (void)kiln::cpu::parallel_for(8, 1, [&](int64_t ib, int64_t ie) {
                                          EXPECT_EQ(ib, 0);
                                          EXPECT_EQ(ie, 8);
                                          ++inner;
                                          return kiln::Error::Ok;
                                        });
                                        std::lock_guard<std::mutex> lock(mutex);
                                        ranges.emplace_back(b, e);
                                        ids.insert(std::this_thread::get_id());
                                        nested_ranges += inner;
                                        return kiln::Error::Ok;
                                      }),
              kiln::Error::Ok);
    std::sort(ranges.begin(), ranges.end());
    ASSERT_EQ(ranges.size(), static_cast<size_t>(threads));
    EXPECT_EQ(ranges.front().first, 0);
    EXPECT_EQ(ranges.back().second, 10);
    for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].first, ranges[i - 1].second);
    EXPECT_EQ(ids.size(), static_cast<size_t>(threads)) << "each range on its own thread";
    EXPECT_TRUE(ids.count(std::this_thread::get_id())) << "the calling thread takes part";
    EXPECT_EQ(nested_ranges, threads);
    EXPECT_FALSE(kiln::cpu::inside_parallel_region());
  }
  EXPECT_EQ(kiln::cpu::parallel_threads(), 1) << "the Scope's end ends the call's team";
}

TEST(CpuParallelFor, GrainLimitsTheRanges) {
  const OpenmpThreads::Scope scope(gomp(), 4);
  for (const auto& [n, grain, want] : {std::tuple<int64_t, int64_t, size_t>{10, 6, 1}, {10, 5, 2}, {3, 1, 3},
                                       {100, 1, 4}, {1, 1, 1}}) {
    std::mutex mutex;
    size_t ranges = 0;
    int64_t covered = 0;
    ASSERT_EQ(kiln::cpu::parallel_for(n, grain,
                                      [&](int64_t b, int64_t e) {
                                        std::lock_guard<std::mutex> lock(mutex);
                                        ++ranges;
                                        covered += e - b;
                                        if (e - b < n) {
                                          EXPECT_GE(e - b, grain);
                                        }
                                        return kiln::Error::Ok;
                                      }),
              kiln::Error::Ok);
    EXPECT_EQ(ranges, want) << "n=" << n << " grain=" << grain;
    EXPECT_EQ(covered, n);
  }
}

TEST(CpuParallelFor, ErrorsAndExceptionsReachTheCaller) {
  const OpenmpThreads::Scope scope(gomp(), 2);
  kiln::clear_error();
  // Range 1 runs on the other thread of the team: its message must come back to this one.
  EXPECT_EQ(kiln::cpu::parallel_for(2, 1,
                                    [&](int64_t b, int64_t) {
                                      if (b == 1) return kiln::set_error(kiln::Error::InvalidArgument, "range one failed");
                                      return kiln::Error::Ok;
                                    }),
            kiln::Error::InvalidArgument);
  EXPECT_EQ(kiln::last_error_message(), "range one failed");
  EXPECT_THROW((void)kiln::cpu::parallel_for(2, 1,
                                             [&](int64_t b, int64_t) -> kiln::Error {
                                               if (b == 1) throw std::runtime_error("boom");
                                               return kiln::Error::Ok;
                                             }),
               std::runtime_error);
}

// out and logsumexp of one attention call on fresh random inputs (f32).
std::pair<std::vector<float>, std::vector<float>> sdpa_outputs(int64_t B, int64_t H, int64_t Hkv, int64_t L,
                                                               int64_t S, int64_t E, bool causal,
                                                               std::vector<double>* want,
                                                               std::vector<double>* want_lse) {
  auto qv = random_values(B * H * L * E, 41), kv = random_values(B * Hkv * S * E, 42),
       vv = random_values(B * Hkv * S * E, 43);
  Handle q, k, v, out, lse;
  make(q, qv, {B, H, L, E}, {L * H * E, E, H * E, 1}, kF32);  // [B, L, H, E] storage, as after a projection
  make(k, kv, {B, Hkv, S, E}, contiguous({B, Hkv, S, E}), kF32);
  make(v, vv, {B, Hkv, S, E}, contiguous({B, Hkv, S, E}), kF32);
  EXPECT_EQ(aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, nullptr, nullptr,
                                                                        out.out(), lse.out()),
            0)
      << kiln::last_error_message();
  if (want)
    ref_sdpa(qv, kv, vv, B, H, Hkv, L, S, E, causal, MaskKind::None, {}, {1, 1, 1, 1}, 1.0 / std::sqrt(double(E)),
             *want, *want_lse);
  if (!out.h || !lse.h) return {};
  return {read(out), read(lse)};
}

TEST(CpuAttention, SameResultWithAnyThreadCount) {
  struct Case {
    int64_t B, H, Hkv, L, S, E;
    bool causal;
  };
  // 6 and 5 (batch, head) pairs: uneven over 4 threads; GQA; one pair only
  // (its GEMMs are then split instead, see CpuGemm below). Then pairs whose
  // scores outgrow a block, computed in blocks of query rows (sdpa.cpp): one
  // pair of 5 blocks over the team, and 3 query heads on one key/value head.
  for (const Case& c : {Case{2, 3, 3, 33, 33, 16, true}, Case{1, 5, 1, 20, 47, 8, false},
                        Case{1, 1, 1, 128, 128, 64, true}, Case{1, 1, 1, 230, 800, 24, true},
                        Case{1, 3, 1, 100, 700, 40, false}}) {
    std::string name = "B";  // appended step by step: GCC 12 flags a long + chain (-Wrestrict, false positive)
    name += std::to_string(c.B);
    name += " H";
    name += std::to_string(c.H);
    name += " L";
    name += std::to_string(c.L);
    std::vector<double> want, want_lse;
    const auto [one, one_lse] = sdpa_outputs(c.B, c.H, c.Hkv, c.L, c.S, c.E, c.causal, &want, &want_lse);
    expect_close(one, want, 1e-5, name + " output, 1 thread");
    expect_close(one_lse, want_lse, 1e-5, name + " logsumexp, 1 thread");
    for (int threads : {2, 3, 4}) {
      const OpenmpThreads::Scope scope(gomp(), threads);
      const auto [got, got_lse] = sdpa_outputs(c.B, c.H, c.Hkv, c.L, c.S, c.E, c.causal, nullptr, nullptr);
      expect_close(got, want, 1e-5, name + " output, " + std::to_string(threads) + " threads");
      if (c.B * c.H > 1 || c.L * c.S > 64 * 1024) {
        // Each (batch, head) pair (or block of its rows) is computed the same way on whichever
        // thread: bit for bit the same.
        EXPECT_EQ(got, one) << name << ", " << threads << " threads";
        EXPECT_EQ(got_lse, one_lse) << name << ", " << threads << " threads";
      }
    }
  }
}

TEST(CpuConvolution, SplitOverTheCallsTeam) {
  // Blocks of output pixels (and depthwise channels) go to the team's threads; each block is computed the same
  // way whichever thread takes it, so every count matches the reference.
  ASSERT_TRUE(gomp().can_fork()) << "libgomp.so.1 could not be opened";
  for (int threads : {1, 2, 3}) {
    const OpenmpThreads::Scope scope(gomp(), threads);
    const std::string t = ", " + std::to_string(threads) + " threads";
    run_conv_layouts({1, 8, 16, 1, {33, 31}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32,
                     Layout::ChannelsLast, Layout::ChannelsLast, "3x3 over 1023 pixels" + t);
    run_conv_layouts({3, 8, 8, 8, {9, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32,
                     Layout::Contiguous, Layout::Contiguous, "depthwise" + t);
    run_conv_layouts({2, 16, 24, 1, {20, 20}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {}, false, false}, kF32,
                     Layout::ChannelsLast, Layout::Contiguous, "1x1" + t);
    // Channels-last output: the three images' 63 pixels each are one range of GEMM rows, so blocks
    // start and end inside images.
    run_conv_layouts({3, 6, 10, 2, {7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32,
                     Layout::ChannelsLast, Layout::Contiguous, "3x3 groups 2 over 3 images" + t);
    run_conv_layouts({3, 6, 10, 1, {7, 9}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {}, false, true}, kF32,
                     Layout::ChannelsLast, Layout::ChannelsLast, "1x1 over 3 images" + t);
    // More channels than pixels: the team splits the output channels (blocks of 16), not the 25 pixels.
    run_conv_layouts({1, 8, 48, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32,
                     Layout::ChannelsLast, Layout::Contiguous, "48 channels over 25 pixels" + t);
    run_conv_layouts({1, 8, 80, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, false, true}, kF32,
                     Layout::Contiguous, Layout::Contiguous, "groups 2 of 40 channels over 25 pixels" + t);
  }
}

TEST(CpuGemm, SplitProductsMatchWithAnyThreadCount) {
  struct Case {
    int64_t m, k, n;
    bool b_t;
  };
  // Row split (m >= n), column split (n > m), a transposed weight as in linear(),
  // and a product too small to split.
  for (const Case& c : {Case{128, 64, 192, true}, Case{8, 256, 512, false}, Case{128, 256, 64, true},
                        Case{37, 64, 80, false}, Case{16, 16, 16, false}}) {
    const std::string name = std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
    auto av = random_values(c.m * c.k, 51), bv = random_values(c.k * c.n, 52), bias = random_values(c.n, 53);
    auto want = ref_matmul(av, bv, 1, c.m, c.k, c.n);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) want[i * c.n + j] += bias[j];
    // Only the tolerance is asserted: a split product runs BLAS on smaller
    // shapes, for which a BLAS may pick other kernels. (With OpenBLAS 0.3.21 the
    // results were bit for bit those of one thread.)
    for (int threads : {1, 2, 3}) {
      const OpenmpThreads::Scope scope(gomp(), threads);
      Handle a, b, bt, out;
      make(a, av, {c.m, c.k}, {c.k, 1}, kF32);
      make(b, bv, {c.k, c.n}, c.b_t ? std::vector<int64_t>{1, c.k} : std::vector<int64_t>{c.n, 1}, kF32);
      make(bt, bias, {c.n}, {1}, kF32);
      std::vector<float> ov(c.m * c.n, std::numeric_limits<float>::quiet_NaN());
      make(out, ov, {c.m, c.n}, {c.n, 1}, kF32);
      ASSERT_EQ(aoti_torch_cpu_addmm_out(out, bt, a, b, 1.0, 1.0), 0) << kiln::last_error_message();
      const auto got = read(out);
      expect_close(got, want, 1e-5, name + ", " + std::to_string(threads) + " threads");
    }
  }
}

// A contiguous int8 (dtype 1) or uint8 (dtype 0) tensor of `sizes` holding `bytes`.
void make_bytes(Handle& t, const std::vector<uint8_t>& bytes, const std::vector<int64_t>& sizes, int32_t dtype) {
  const std::vector<int64_t> strides = contiguous(sizes);
  ASSERT_EQ(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), dtype, 0, 0,
                                     t.out()),
            0)
      << kiln::last_error_message();
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(t, &p), 0);
  std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(p));
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  std::vector<uint8_t> v(n);
  for (auto& b : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<uint8_t>(s >> 56);
  }
  return v;
}

TEST(CpuQuantizedLinear, SplitOverTheCallsTeam) {
  // The weight-only quantized products split their output columns (decode) or
  // blocks of 64 weight rows (prefill) over the call's team. Each column is
  // computed the same way on whichever thread: decode results are bit for bit
  // those of one thread; prefill's match within float32 rounding (BLAS may
  // pick other kernels per block, see CpuGemm below) and a double reference.
  ASSERT_TRUE(gomp().can_fork()) << "libgomp.so.1 could not be opened";
  const int64_t k = 256, n = 200, group = 64;
  for (const int64_t m : {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{40}}) {
    const std::string name = "m=" + std::to_string(m);
    std::vector<float> xv = random_values(static_cast<size_t>(m * k), 61);
    std::vector<float> szv = random_values(static_cast<size_t>(n * (k / group) * 2), 62);
    const std::vector<uint8_t> q4 = random_bytes(static_cast<size_t>(n * k / 2), 63);
    const std::vector<uint8_t> q8 = random_bytes(static_cast<size_t>(n * k), 64);
    std::vector<float> scales = random_values(static_cast<size_t>(n), 65);
    std::vector<double> want4(static_cast<size_t>(m * n)), want8(static_cast<size_t>(m * n));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double s4 = 0.0, s8 = 0.0;
        for (int64_t c = 0; c < k; ++c) {
          const int code = (q4[j * (k / 2) + c / 2] >> (4 * (c % 2))) & 15;
          const size_t g = static_cast<size_t>((j * (k / group) + c / group) * 2);
          const double w4 = (code - 8.0) * szv[g] + szv[g + 1];
          s4 += w4 * xv[i * k + c];
          s8 += static_cast<double>(static_cast<int8_t>(q8[j * k + c])) * xv[i * k + c];
        }
        want4[i * n + j] = s4;
        want8[i * n + j] = s8 * scales[j];
      }
    std::vector<float> one4, one8;
    for (int threads : {1, 2, 3}) {
      const OpenmpThreads::Scope scope(gomp(), threads);
      const std::string t = name + ", " + std::to_string(threads) + " threads";
      Handle x, sz, qw4, qw8, sc, r4, r8;
      make(x, xv, {m, k}, {k, 1}, kF32);
      make(sz, szv, {n, k / group, 2}, {k / group * 2, 2, 1}, kF32);
      make(sc, scales, {n}, {1}, kF32);
      make_bytes(qw4, q4, {n, k / 2}, 0);
      make_bytes(qw8, q8, {n, k}, 1);
      ASSERT_EQ(aoti_torch_cpu_int4_linear(x, qw4, sz, group, r4.out()), 0) << kiln::last_error_message();
      ASSERT_EQ(aoti_torch_cpu__weight_int8pack_mm(x, qw8, sc, r8.out()), 0) << kiln::last_error_message();
      const std::vector<float> got4 = read(r4), got8 = read(r8);
      expect_close(got4, want4, 1e-4, "int4_linear " + t);
      expect_close(got8, want8, 1e-4, "_weight_int8pack_mm " + t);
      if (threads == 1) {
        one4 = got4;
        one8 = got8;
      } else if (m <= 4) {
        EXPECT_EQ(got4, one4) << "int4_linear " << t;
        EXPECT_EQ(got8, one8) << "_weight_int8pack_mm " << t;
      }
    }
  }
}

}  // namespace
