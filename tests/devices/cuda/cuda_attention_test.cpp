// The SDPA fallbacks (flash / efficient / cuDNN signatures, one kernel)
// against a double-precision host softmax(QK^T * scale + bias) V, including
// their auxiliary outputs and result layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "cuda_test_util.h"
#include "shims/cuda/cuda_shims.h"

namespace {

using namespace kiln_test;
using kiln::DType;

std::vector<float> rounded(std::vector<float> v, DType dt) {
  for (auto& x : v) x = round_to(x, dt);
  return v;
}

struct Inputs {
  std::vector<float> q, k, v;
  Handle hq, hk, hv;
};

// q is laid out [B, L, H, E] in memory (as after a projection + view +
// transpose); k and v contiguous, or with kv_transposed_memory [B, S, H, E]
// (a key/value cache stored sequence-major).
void make_inputs(const Shape& s, DType dt, Inputs& in, bool q_transposed_memory = true,
                 bool kv_transposed_memory = false) {
  in.q = rounded(random_values(static_cast<size_t>(s.B * s.Hq * s.L * s.E), 61), dt);
  in.k = rounded(random_values(static_cast<size_t>(s.B * s.Hk * s.S * s.E), 62), dt);
  in.v = rounded(random_values(static_cast<size_t>(s.B * s.Hk * s.S * s.Ev), 63), dt);
  std::vector<int64_t> qstr, kstr, vstr;
  if (q_transposed_memory) qstr = {s.L * s.Hq * s.E, s.E, s.Hq * s.E, 1};
  if (kv_transposed_memory) {
    kstr = {s.S * s.Hk * s.E, s.E, s.Hk * s.E, 1};
    vstr = {s.S * s.Hk * s.Ev, s.Ev, s.Hk * s.Ev, 1};
  }
  in.hq.h = device_tensor(in.q, {s.B, s.Hq, s.L, s.E}, dt, qstr);
  in.hk.h = device_tensor(in.k, {s.B, s.Hk, s.S, s.E}, dt, kstr);
  in.hv.h = device_tensor(in.v, {s.B, s.Hk, s.S, s.Ev}, dt, vstr);
}

class CudaAttention : public ::testing::TestWithParam<DType> {};

TEST_P(CudaAttention, FlashCausalAndScaledWithAuxOutputs) {
  const DType dt = GetParam();
  auto flash = shim<decltype(&aoti_torch_cuda__scaled_dot_product_flash_attention)>(
      "aoti_torch_cuda__scaled_dot_product_flash_attention");
  struct Case {
    Shape s;
    bool causal;
    double scale;  // 0 = default 1/sqrt(E)
  };
  const Case cases[] = {{{2, 3, 3, 40, 40, 64, 64}, true, 0},
                        {{1, 2, 2, 33, 70, 32, 32}, false, 0.3},
                        {{2, 4, 2, 17, 29, 64, 64}, true, 0},      // grouped-query, causal with L != S: refused
                        // Head dim 256: > 48 KB of shared memory in either kernel.
                        {{1, 2, 2, 20, 45, 256, 256}, false, 0},
                        // float16/bfloat16 on sm_80+: the tensor-core kernel
                        // (head dims 64, 128 and 256, partial last tiles, GQA, S != L).
                        {{1, 4, 2, 200, 200, 128, 128}, true, 0},
                        {{1, 8, 1, 130, 130, 256, 256}, true, 0},  // Gemma-style: GQA 8:1
                        {{2, 2, 2, 96, 160, 64, 64}, false, 0.25},
                        {{1, 2, 2, 150, 90, 64, 64}, true, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE("L=" + std::to_string(c.s.L) + " S=" + std::to_string(c.s.S) + " E=" + std::to_string(c.s.E) +
                 (c.causal ? " causal" : ""));
    Inputs in;
    make_inputs(c.s, dt, in);
    double scale = c.scale;
    const double used = scale != 0 ? scale : 1.0 / std::sqrt(double(c.s.E));
    AtenTensorHandle r[9] = {};
    int64_t max_q = -1, max_k = -1;
    const AOTITorchError rc = flash(in.hq, in.hk, in.hv, 0.0, c.causal ? 1 : 0, 0, c.scale != 0 ? &scale : nullptr,
                                    &r[0], &r[1], &r[2], &r[3], &max_q, &max_k, &r[6], &r[7], &r[8]);
    if (c.causal && c.s.L != c.s.S) {
      // ATen's flash kernel aligns this mask bottom-right, Kiln's kernels top-left: refused, not answered.
      EXPECT_EQ(rc, 1);
      EXPECT_NE(kiln::last_error_message().find("bottom right"), std::string::npos) << kiln::last_error_message();
      EXPECT_EQ(r[0], nullptr);
      continue;
    }
    ASSERT_EQ(rc, 0) << kiln::last_error_message();
    Handle out(r[0]), lse(r[1]), cq(r[2]), ck(r[3]), seed(r[6]), off(r[7]), dbg(r[8]);
    std::vector<float> want, want_lse;
    ref_attention(c.s, in.q, in.k, in.v, {}, c.causal, used, want, want_lse);
    expect_close(host_values(out), want, tolerance(dt), "flash output");
    expect_close(host_values(lse), want_lse, 1e-4, "flash logsumexp");
    EXPECT_EQ(strides_of(out), strides_of(in.hq)) << "flash output must take query's layout (empty_like)";
    EXPECT_EQ(sizes_of(lse), (std::vector<int64_t>{c.s.B, c.s.Hq, c.s.L}));
    EXPECT_EQ(max_q, c.s.L);
    EXPECT_EQ(max_k, c.s.S);
    bool defined = true;
    ASSERT_EQ(aoti_torch_is_defined(cq, &defined), 0);
    EXPECT_FALSE(defined) << "cum_seq_q is None";
    int32_t code = -1;
    ASSERT_EQ(aoti_torch_get_dtype(seed, &code), 0);
    EXPECT_EQ(code, static_cast<int32_t>(DType::UInt64));
    EXPECT_EQ(sizes_of(seed), (std::vector<int64_t>{2}));
    EXPECT_EQ(sizes_of(dbg), (std::vector<int64_t>{0}));
  }
}

TEST_P(CudaAttention, EfficientWithAdditiveBiasAndBoolMask) {
  const DType dt = GetParam();
  auto eff = shim<decltype(&aoti_torch_cuda__scaled_dot_product_efficient_attention)>(
      "aoti_torch_cuda__scaled_dot_product_efficient_attention");
  // The second shape runs the tensor-core kernel for float16/bfloat16 (on sm_80+).
  for (const Shape& s : {Shape{2, 2, 2, 37, 50, 32, 32}, Shape{1, 4, 2, 100, 130, 64, 64}}) {
    SCOPED_TRACE("E=" + std::to_string(s.E) + " L=" + std::to_string(s.L) + " S=" + std::to_string(s.S));
    const double scale = 1.0 / std::sqrt(double(s.E));
    const int64_t lse_len = (s.L + 31) / 32 * 32;
    Inputs in;
    make_inputs(s, dt, in, false);
    // Additive bias [B, 1, L, S] (broadcast over heads), in the query's dtype.
    const auto bias = rounded(random_values(static_cast<size_t>(s.B * s.L * s.S), 71), dt);
    std::vector<float> dense_bias(static_cast<size_t>(s.B * s.Hq * s.L * s.S));
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h)
        for (int64_t i = 0; i < s.L * s.S; ++i) dense_bias[(b * s.Hq + h) * s.L * s.S + i] = bias[b * s.L * s.S + i];
    Handle hbias(device_tensor(bias, {s.B, 1, s.L, s.S}, dt));
    AtenTensorHandle bias_handle = hbias.h;
    for (bool causal : {false, true}) {
      AtenTensorHandle r[4] = {};
      ASSERT_EQ(eff(in.hq, in.hk, in.hv, &bias_handle, 1, 0.0, causal ? 1 : 0, nullptr, &r[0], &r[1], &r[2], &r[3]),
                0)
          << kiln::last_error_message();
      Handle out(r[0]), lse(r[1]), seed(r[2]), off(r[3]);
      std::vector<float> want, want_lse;
      ref_attention(s, in.q, in.k, in.v, dense_bias, causal, scale, want, want_lse);
      expect_close(host_values(out), want, tolerance(dt), causal ? "efficient + bias, causal" : "efficient + bias");
      // ATen's layout: [B, L, H, Ev] memory; logsumexp rows padded to 32.
      EXPECT_EQ(strides_of(out), (std::vector<int64_t>{s.L * s.Hq * s.Ev, s.Ev, s.Hq * s.Ev, 1}));
      EXPECT_EQ(sizes_of(lse), (std::vector<int64_t>{s.B, s.Hq, lse_len}));
      const auto got_lse = host_values(lse);
      std::vector<float> got_head;
      for (int64_t bh = 0; bh < s.B * s.Hq; ++bh)
        for (int64_t i = 0; i < s.L; ++i) got_head.push_back(got_lse[bh * lse_len + i]);
      expect_close(got_head, want_lse, 1e-4, "efficient logsumexp");
    }
    // Boolean keep-mask [L, S] (broadcast over batch and heads), with one fully
    // masked row, which comes out as zeros.
    std::vector<float> mask(static_cast<size_t>(s.L * s.S));
    for (int64_t i = 0; i < s.L; ++i)
      for (int64_t j = 0; j < s.S; ++j) mask[i * s.S + j] = (i != 5 && (i + 2 * j) % 3 != 0) ? 1.0f : 0.0f;
    std::vector<float> dense_mask(static_cast<size_t>(s.B * s.Hq * s.L * s.S));
    for (size_t i = 0; i < dense_mask.size(); ++i)
      dense_mask[i] = mask[i % mask.size()] != 0.0f ? 0.0f : -INFINITY;
    Handle hmask(device_tensor(mask, {s.L, s.S}, DType::Bool));
    AtenTensorHandle mask_handle = hmask.h;
    AtenTensorHandle r[4] = {};
    ASSERT_EQ(eff(in.hq, in.hk, in.hv, &mask_handle, 0, 0.0, 0, nullptr, &r[0], &r[1], &r[2], &r[3]), 0)
        << kiln::last_error_message();
    Handle out(r[0]), lse(r[1]), seed(r[2]), off(r[3]);
    std::vector<float> want, want_lse;
    ref_attention(s, in.q, in.k, in.v, dense_mask, false, scale, want, want_lse);
    expect_close(host_values(out), want, tolerance(dt), "efficient + bool mask");
    EXPECT_EQ(sizes_of(lse), (std::vector<int64_t>{s.B, s.Hq, 0})) << "no logsumexp without compute_log_sumexp";
  }
}

TEST_P(CudaAttention, CudnnVariantLayoutsAndValueHeadDim) {
  const DType dt = GetParam();
  auto cudnn = shim<decltype(&aoti_torch_cuda__scaled_dot_product_cudnn_attention)>(
      "aoti_torch_cuda__scaled_dot_product_cudnn_attention");
  const Shape s{2, 3, 3, 24, 31, 32, 48};
  Inputs in;
  make_inputs(s, dt, in);  // q memory [B, L, H, E]
  double scale = 0.2;
  AtenTensorHandle r[9] = {};
  int64_t max_q = 0, max_k = 0;
  ASSERT_EQ(cudnn(in.hq, in.hk, in.hv, nullptr, 1, 0.0, 1, 0, &scale, &r[0], &r[1], &r[2], &r[3], &max_q, &max_k,
                  &r[6], &r[7], &r[8]),
            0)
      << kiln::last_error_message();
  Handle out(r[0]), lse(r[1]), a(r[2]), b(r[3]), seed(r[6]), off(r[7]), dbg(r[8]);
  std::vector<float> want, want_lse;
  ref_attention(s, in.q, in.k, in.v, {}, true, 0.2, want, want_lse);
  expect_close(host_values(out), want, tolerance(dt), "cudnn-signature output");
  expect_close(host_values(lse), want_lse, 1e-4, "cudnn-signature logsumexp");
  // Result shape differs from query's (Ev != E): query's dimension order, dense.
  EXPECT_EQ(strides_of(out), (std::vector<int64_t>{s.L * s.Hq * s.Ev, s.Ev, s.Hq * s.Ev, 1}));
  EXPECT_EQ(sizes_of(lse), (std::vector<int64_t>{s.B, s.Hq, s.L, 1}));
  EXPECT_EQ(max_q, s.L);
  EXPECT_EQ(max_k, s.S);
}

// Decode-shaped problems (1 or 3 query rows, 8 query heads over 1, 2 or 4
// key/value heads): the tiled grid would be a handful of blocks, so these run
// the split-KV path (key chunks in separate blocks, merged by a second
// kernel), a single chunk when few keys are visible (S = 1, 31, or causal,
// whose upper-left mask leaves rows only keys 0..L-1) and up to ~128 chunks
// at S = 4097. The masks blank whole 64-key runs, so some chunks (and warps)
// see no key at all, and the bool mask blanks one head's row entirely.
TEST_P(CudaAttention, DecodeShapesSplitKeys) {
  const DType dt = GetParam();
  auto flash = shim<decltype(&aoti_torch_cuda__scaled_dot_product_flash_attention)>(
      "aoti_torch_cuda__scaled_dot_product_flash_attention");
  auto eff = shim<decltype(&aoti_torch_cuda__scaled_dot_product_efficient_attention)>(
      "aoti_torch_cuda__scaled_dot_product_efficient_attention");
  enum class Mask { None, Bool, Float };
  const int64_t dims[][2] = {{64, 64}, {128, 128}, {256, 256}, {64, 256}};  // {E, Ev}
  int cases = 0;
  for (int64_t L : {1, 3})
    for (int64_t S : {1, 31, 1024, 4097})
      for (const auto& d : dims)
        for (int64_t Hk : {1, 2, 4})
          for (bool causal : {false, true})
            for (Mask mask : {Mask::None, Mask::Bool, Mask::Float}) {
              const Shape s{1, 8, Hk, L, S, d[0], d[1]};
              const std::string what = "L=" + std::to_string(L) + " S=" + std::to_string(S) + " E=" +
                                       std::to_string(d[0]) + " Ev=" + std::to_string(d[1]) + " Hk=" +
                                       std::to_string(Hk) + (causal ? " causal" : "") +
                                       (mask == Mask::Bool ? " bool-mask" : mask == Mask::Float ? " float-bias" : "");
              SCOPED_TRACE(what);
              Inputs in;
              make_inputs(s, dt, in, true, /*kv_transposed_memory=*/Hk == 4);
              // Dense [B, Hq, L, S] additive reference mask (0 or -inf, plus the float bias).
              std::vector<float> dense;
              Handle hmask;
              if (mask == Mask::Bool) {
                // Keep-mask [Hq, L, S] (broadcast over batch): head 3's row 0 sees nothing.
                std::vector<float> keep(static_cast<size_t>(s.Hq * L * S));
                for (int64_t h = 0; h < s.Hq; ++h)
                  for (int64_t i = 0; i < L; ++i)
                    for (int64_t j = 0; j < S; ++j)
                      keep[(h * L + i) * S + j] =
                          (h == 3 && i == 0) || (j / 64) % 3 == 1 || (j * 7 + i + h) % 5 == 0 ? 0.0f : 1.0f;
                dense.resize(keep.size());
                for (size_t x = 0; x < keep.size(); ++x) dense[x] = keep[x] != 0.0f ? 0.0f : -INFINITY;
                hmask.h = device_tensor(keep, {s.Hq, L, S}, DType::Bool);
              } else if (mask == Mask::Float) {
                // Float32 bias [1, 1, L, S] (broadcast over heads) with -inf runs.
                std::vector<float> bias = random_values(static_cast<size_t>(L * S), 73);
                for (int64_t i = 0; i < L; ++i)
                  for (int64_t j = 0; j < S; ++j)
                    if ((j / 64) % 3 == 1 || (j + i) % 11 == 4) bias[i * S + j] = -INFINITY;
                dense.resize(static_cast<size_t>(s.Hq * L * S));
                for (size_t x = 0; x < dense.size(); ++x) dense[x] = bias[x % bias.size()];
                hmask.h = device_tensor(bias, {1, 1, L, S}, DType::Float32);
              }
              std::vector<float> want, want_lse;
              ref_attention(s, in.q, in.k, in.v, dense, causal, 1.0 / std::sqrt(double(s.E)), want, want_lse);
              std::vector<float> got_lse;
              Handle out, lse;
              // ATen's flash kernel aligns a non-square causal mask bottom-right (Kiln's flash shim
              // refuses it); the efficient kernel aligns it top-left, as torch's is_causal.
              if (mask == Mask::None && !(causal && L != S)) {
                AtenTensorHandle r[9] = {};
                int64_t max_q = 0, max_k = 0;
                ASSERT_EQ(flash(in.hq, in.hk, in.hv, 0.0, causal ? 1 : 0, 0, nullptr, &r[0], &r[1], &r[2], &r[3],
                                &max_q, &max_k, &r[6], &r[7], &r[8]),
                          0)
                    << kiln::last_error_message();
                out.h = r[0];
                lse.h = r[1];
                Handle cq(r[2]), ck(r[3]), seed(r[6]), off(r[7]), dbg(r[8]);
                got_lse = host_values(lse);
              } else {
                AtenTensorHandle r[4] = {};
                AtenTensorHandle bias_handle = hmask.h;
                ASSERT_EQ(eff(in.hq, in.hk, in.hv, mask == Mask::None ? nullptr : &bias_handle, 1, 0.0, causal ? 1 : 0,
                              nullptr, &r[0], &r[1], &r[2], &r[3]),
                          0)
                    << kiln::last_error_message();
                out.h = r[0];
                lse.h = r[1];
                Handle seed(r[2]), off(r[3]);
                const auto padded = host_values(lse);  // [B, Hq, 32]: rows padded to 32
                for (int64_t bh = 0; bh < s.B * s.Hq; ++bh)
                  for (int64_t i = 0; i < L; ++i) got_lse.push_back(padded[static_cast<size_t>(bh * 32 + i)]);
              }
              const auto got = host_values(out);
              for (float x : got) ASSERT_TRUE(std::isfinite(x)) << "non-finite output";
              expect_close(got, want, tolerance(dt), what + " output");
              // logsumexp: -inf exactly where a row sees no key, close elsewhere.
              ASSERT_EQ(got_lse.size(), want_lse.size());
              std::vector<float> got_finite, want_finite;
              for (size_t x = 0; x < want_lse.size(); ++x) {
                if (std::isinf(want_lse[x])) {
                  EXPECT_TRUE(std::isinf(got_lse[x]) && got_lse[x] < 0) << what << ": lse " << x << " = " << got_lse[x];
                } else {
                  got_finite.push_back(got_lse[x]);
                  want_finite.push_back(want_lse[x]);
                }
              }
              expect_close(got_finite, want_finite, 1e-4, what + " logsumexp");
              ++cases;
            }
  EXPECT_EQ(cases, 2 * 4 * 4 * 3 * 2 * 3);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaAttention, ::testing::Values(DType::Float32, DType::Float16, DType::BFloat16),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

TEST(CudaAttentionErrors, DropoutIsRefused) {
  auto flash = shim<decltype(&aoti_torch_cuda__scaled_dot_product_flash_attention)>(
      "aoti_torch_cuda__scaled_dot_product_flash_attention");
  const Shape s{1, 1, 1, 4, 4, 8, 8};
  Inputs in;
  make_inputs(s, DType::Float32, in);
  AtenTensorHandle r[9] = {};
  int64_t a = 0, b = 0;
  EXPECT_EQ(flash(in.hq, in.hk, in.hv, 0.1, 0, 0, nullptr, &r[0], &r[1], &r[2], &r[3], &a, &b, &r[6], &r[7], &r[8]), 1);
  EXPECT_NE(kiln::last_error_message().find("dropout_p must be 0"), std::string::npos) << kiln::last_error_message();
  EXPECT_EQ(r[0], nullptr);
}

}  // namespace
