// The decode attention kernel (short float16/bfloat16 queries, GQA groups of
// at most 16 rows per key/value head) called through plan_attention and
// launch_attention: which calls the planner gives it and which it must not,
// and its output and logsumexp against the double-precision reference over
// group sizes 1..16, query lengths 1 and 2, 1 to 4097 keys (one partial tile,
// several tiles per chunk, fully masked tiles), head dims 64/128/256 with
// E != Ev, causal, boolean / input-dtype / float32 masks with fully masked
// rows, and transposed or padded (KV-cache-like) layouts. Outputs, logsumexp
// and the workspace are poisoned with NaN before every run.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "cuda_test_util.h"
#include "devices/cuda/kernels/attention_kernel.h"

namespace {

using namespace kiln_test;
using kiln::DType;
using kiln::cudadev::AttentionParams;
using kiln::cudadev::AttentionPlan;

// A well-formed contiguous problem at 16-byte-aligned fake addresses, for the
// planner (which never dereferences them).
AttentionParams fake_params(DType dt, int64_t B, int64_t Hq, int64_t Hk, int64_t L, int64_t S, int64_t E,
                            int64_t Ev) {
  AttentionParams p;
  p.q = p.k = p.v = reinterpret_cast<const void*>(uintptr_t{0x10000});
  p.out = reinterpret_cast<void*>(uintptr_t{0x20000});
  p.dtype = dt;
  p.B = B;
  p.Hq = Hq;
  p.Hk = Hk;
  p.L = L;
  p.S = S;
  p.E = E;
  p.Ev = Ev;
  const int64_t q_str[4] = {Hq * L * E, L * E, E, 1}, o_str[4] = {Hq * L * Ev, L * Ev, Ev, 1};
  const int64_t k_str[4] = {Hk * S * E, S * E, E, 1}, v_str[4] = {Hk * S * Ev, S * Ev, Ev, 1};
  for (int d = 0; d < 4; ++d) {
    p.q_strides[d] = q_str[d];
    p.out_strides[d] = o_str[d];
    p.k_strides[d] = k_str[d];
    p.v_strides[d] = v_str[d];
  }
  return p;
}

TEST(CudaAttentionDecodePlanner, TakesShortHalfQueriesOnly) {
  const int sms = 132;
  using kiln::cudadev::plan_attention;
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(kiln::dtype_name(dt));
    // Gemma 3 decode: 8 query heads over 1 k/v head, 1 row, 1024 keys, head dim 256.
    AttentionParams p = fake_params(dt, 1, 8, 1, 1, 1024, 256, 256);
    AttentionPlan plan = plan_attention(p, sms, true);
    EXPECT_TRUE(plan.decode);
    EXPECT_FALSE(plan.tensor_core);
    EXPECT_GT(plan.splits, 1) << "one chunk would leave the GPU idle";
    EXPECT_LE(plan.splits, 128);
    EXPECT_GE(plan.splits * plan.chunk, 1024);
    EXPECT_GE(plan.workspace_bytes, sizeof(float) * static_cast<size_t>(8 * plan.splits * (256 + 2)));
    // 16 rows per k/v head (the most), E != Ev, a long cache: capped chunks.
    p = fake_params(dt, 2, 16, 2, 2, 4097, 64, 256);
    plan = plan_attention(p, sms, true);
    EXPECT_TRUE(plan.decode);
    EXPECT_LE(plan.splits, 128);
    EXPECT_GE(plan.splits * plan.chunk, 4097);
    EXPECT_GE(plan.workspace_bytes, sizeof(float) * static_cast<size_t>(2 * 16 * 2 * plan.splits * (256 + 2)));
    // A big batch fills the GPU by itself: still the decode kernel.
    p = fake_params(dt, 64, 8, 1, 1, 1024, 128, 128);
    EXPECT_TRUE(plan_attention(p, sms, true).decode);
    // q read through its strides: a misaligned q does not matter.
    p = fake_params(dt, 1, 8, 1, 1, 1024, 256, 256);
    p.q = reinterpret_cast<const void*>(uintptr_t{0x10002});
    EXPECT_TRUE(plan_attention(p, sms, true).decode) << "misaligned q";
    // Causal decode of 1 row sees 1 key.
    p = fake_params(dt, 1, 8, 1, 1, 1024, 256, 256);
    p.causal = true;
    plan = plan_attention(p, sms, true);
    EXPECT_TRUE(plan.decode);
    EXPECT_EQ(plan.splits, 1);

    // ... and the calls it must leave to the other kernels.
    p = fake_params(dt, 1, 32, 1, 1, 1024, 128, 128);
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "32 rows per k/v head";
    p = fake_params(dt, 1, 16, 2, 3, 1024, 128, 128);
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "8 heads x 3 rows = 24 rows per k/v head";
    p = fake_params(dt, 1, 16, 16, 17, 1024, 128, 128);
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "17 query rows";
    p = fake_params(dt, 1, 8, 1, 1, 1024, 128, 128);
    p.k_strides[2] = 132;  // key rows 8 bytes off 16-byte alignment
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "misaligned key rows";
    p = fake_params(dt, 1, 8, 1, 1, 1024, 128, 128);
    p.v_strides[1] = 1024 * 128 + 4;  // only the head stride is off; with Hk = 1 it is never used
    EXPECT_TRUE(plan_attention(p, sms, true).decode) << "stride of a size-1 dim";
    p = fake_params(dt, 2, 8, 1, 1, 1024, 128, 128);
    p.v_strides[0] = 1024 * 128 + 4;  // batch stride off alignment, B = 2
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "misaligned value batch stride";
    p = fake_params(dt, 1, 8, 1, 1, 1024, 128, 128);
    p.v = reinterpret_cast<const void*>(uintptr_t{0x10008});
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "misaligned v pointer";
    p = fake_params(dt, 1, 8, 1, 1, 1024, 128, 128);
    p.k_strides[3] = 2;
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "strided key head dim";
    p = fake_params(dt, 1, 8, 1, 1, 1024, 60, 60);
    EXPECT_FALSE(plan_attention(p, sms, true).decode) << "head dim 60";
  }
  AttentionParams p = fake_params(DType::Float32, 1, 8, 1, 1, 1024, 256, 256);
  const AttentionPlan f32 = plan_attention(p, sms, true);
  EXPECT_FALSE(f32.decode) << "float32";
  EXPECT_GE(f32.splits, 1) << "float32 decode keeps the split-KV kernel";
  // The launcher refuses a decode plan the call does not fit.
  AttentionPlan forced;
  forced.decode = true;
  forced.splits = 8;
  forced.chunk = 128;
  EXPECT_EQ(kiln::cudadev::launch_attention(p, forced, reinterpret_cast<void*>(uintptr_t{0x30000}), nullptr),
            kiln::Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find("float16/bfloat16"), std::string::npos) << kiln::last_error_message();
}

enum class Mask { None, Bool, Input, Float32 };

const char* mask_name(Mask m) {
  switch (m) {
    case Mask::None: return "no mask";
    case Mask::Bool: return "bool keep-mask [Hq,L,S]";
    case Mask::Input: return "additive bias [B,1,L,S] in the input dtype";
    default: return "additive float32 bias [1,Hq,L,S]";
  }
}

enum class Layout { Contiguous, Transposed, PaddedCache, MisalignedKeys };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "q/out [B,L,H,E], k/v [B,S,Hk,E]";
    case Layout::PaddedCache: return "k/v in a padded cache [B,Hk,S+5,E]";
    default: return "key rows of E+4 (not 16-byte aligned)";
  }
}

// One problem through the planner and launcher; checks the plan's choice
// (`want_decode`) and out/lse against the reference.
void run_case(DType dt, const Shape& s, bool causal, Mask mask, Layout layout, bool want_decode, uint32_t seed) {
  const std::string what = std::string(kiln::dtype_name(dt)) + " B=" + std::to_string(s.B) +
                           " Hq=" + std::to_string(s.Hq) + " Hk=" + std::to_string(s.Hk) +
                           " L=" + std::to_string(s.L) + " S=" + std::to_string(s.S) + " E=" + std::to_string(s.E) +
                           " Ev=" + std::to_string(s.Ev) + (causal ? " causal, " : ", ") + mask_name(mask) + ", " +
                           layout_name(layout);
  SCOPED_TRACE(what);
  std::vector<float> q = random_values(static_cast<size_t>(s.B * s.Hq * s.L * s.E), seed);
  std::vector<float> k = random_values(static_cast<size_t>(s.B * s.Hk * s.S * s.E), seed + 1);
  std::vector<float> v = random_values(static_cast<size_t>(s.B * s.Hk * s.S * s.Ev), seed + 2);
  for (auto* x : {&q, &k, &v})
    for (float& f : *x) f = round_to(2.0f * f, dt);  // wider scores: a peakier softmax

  std::vector<int64_t> q_str, o_str, k_str, v_str;  // empty: contiguous
  if (layout == Layout::Transposed) {
    q_str = {s.L * s.Hq * s.E, s.E, s.Hq * s.E, 1};
    o_str = {s.L * s.Hq * s.Ev, s.Ev, s.Hq * s.Ev, 1};
    k_str = {s.S * s.Hk * s.E, s.E, s.Hk * s.E, 1};
    v_str = {s.S * s.Hk * s.Ev, s.Ev, s.Hk * s.Ev, 1};
  } else if (layout == Layout::PaddedCache) {
    const int64_t cap = s.S + 5;
    k_str = {s.Hk * cap * s.E, cap * s.E, s.E, 1};
    v_str = {s.Hk * cap * s.Ev, cap * s.Ev, s.Ev, 1};
  } else if (layout == Layout::MisalignedKeys) {
    k_str = {s.Hk * s.S * (s.E + 4), s.S * (s.E + 4), s.E + 4, 1};
  }
  Handle hq(device_tensor(q, {s.B, s.Hq, s.L, s.E}, dt, q_str));
  Handle hk(device_tensor(k, {s.B, s.Hk, s.S, s.E}, dt, k_str));
  Handle hv(device_tensor(v, {s.B, s.Hk, s.S, s.Ev}, dt, v_str));

  // The mask on the device and as a dense [B, Hq, L, S] additive reference.
  std::vector<float> dense;
  Handle hmask;
  std::vector<int64_t> mask_strides;
  DType mask_dtype = DType::Float32;
  const size_t dense_n = static_cast<size_t>(s.B * s.Hq * s.L * s.S);
  if (mask == Mask::Bool) {
    // Head 1's row 0 sees nothing; keys 64..127 of every 192 (whole tiles)
    // are hidden from every row; a scatter of other keys too.
    std::vector<float> keep(static_cast<size_t>(s.Hq * s.L * s.S));
    for (int64_t h = 0; h < s.Hq; ++h)
      for (int64_t i = 0; i < s.L; ++i)
        for (int64_t j = 0; j < s.S; ++j)
          keep[(h * s.L + i) * s.S + j] =
              (h == 1 && i == 0) || (j / 64) % 3 == 1 || (5 * j + i + h) % 7 == 0 ? 0.0f : 1.0f;
    dense.resize(dense_n);
    for (size_t x = 0; x < dense_n; ++x) dense[x] = keep[x % keep.size()] != 0.0f ? 0.0f : -INFINITY;
    hmask.h = device_tensor(keep, {s.Hq, s.L, s.S}, DType::Bool);
    mask_strides = {0, s.L * s.S, s.S, 1};
    mask_dtype = DType::Bool;
  } else if (mask == Mask::Input) {
    // Batch 0's last row fully -inf; keys 128..191 of every 192 -inf; a scatter of -inf.
    std::vector<float> bias = random_values(static_cast<size_t>(s.B * s.L * s.S), seed + 3);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t i = 0; i < s.L; ++i)
        for (int64_t j = 0; j < s.S; ++j) {
          float& x = bias[(b * s.L + i) * s.S + j];
          x = (b == 0 && i == s.L - 1) || (j / 64) % 3 == 2 || (i + j + b) % 13 == 0 ? -INFINITY : round_to(x, dt);
        }
    dense.resize(dense_n);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h)
        for (int64_t x = 0; x < s.L * s.S; ++x) dense[(b * s.Hq + h) * s.L * s.S + x] = bias[b * s.L * s.S + x];
    hmask.h = device_tensor(bias, {s.B, 1, s.L, s.S}, dt);
    mask_strides = {s.L * s.S, 0, s.S, 1};
    mask_dtype = dt;
  } else if (mask == Mask::Float32) {
    std::vector<float> bias = random_values(static_cast<size_t>(s.Hq * s.L * s.S), seed + 4);
    for (int64_t h = 0; h < s.Hq; ++h)
      for (int64_t i = 0; i < s.L; ++i)
        for (int64_t j = 0; j < s.S; ++j)
          if ((j + 2 * i + h) % 17 == 0) bias[(h * s.L + i) * s.S + j] = -INFINITY;
    dense.resize(dense_n);
    for (size_t x = 0; x < dense_n; ++x) dense[x] = bias[x % bias.size()];
    hmask.h = device_tensor(bias, {1, s.Hq, s.L, s.S}, DType::Float32);
    mask_strides = {0, s.L * s.S, s.S, 1};
  }
  std::vector<float> want, want_lse;
  const double scale = 0.7 / std::sqrt(double(s.E));
  ref_attention(s, q, k, v, dense, causal, scale, want, want_lse);

  Handle out(device_empty({s.B, s.Hq, s.L, s.Ev}, dt, o_str));  // NaN-filled: unwritten shows
  Handle lse(device_empty({s.B, s.Hq, s.L}, DType::Float32));
  AttentionParams p;
  p.q = data_of(hq);
  p.k = data_of(hk);
  p.v = data_of(hv);
  p.out = data_of(out);
  p.lse = static_cast<float*>(data_of(lse));
  p.dtype = dt;
  p.B = s.B;
  p.Hq = s.Hq;
  p.Hk = s.Hk;
  p.L = s.L;
  p.S = s.S;
  p.E = s.E;
  p.Ev = s.Ev;
  p.scale = static_cast<float>(scale);
  p.causal = causal;
  copy_strides(strides_of(hq), p.q_strides);
  copy_strides(strides_of(hk), p.k_strides);
  copy_strides(strides_of(hv), p.v_strides);
  copy_strides(strides_of(out), p.out_strides);
  p.lse_strides[0] = s.Hq * s.L;
  p.lse_strides[1] = s.L;
  p.lse_strides[2] = 1;
  if (mask != Mask::None) {
    p.bias = data_of(hmask);
    p.bias_dtype = mask_dtype;
    copy_strides(mask_strides, p.bias_strides);
  }
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const AttentionPlan plan = kiln::cudadev::plan_attention(p, sms, true);
  ASSERT_EQ(plan.decode, want_decode) << "the planner's choice of the decode kernel";
  void* workspace = nullptr;
  if (plan.workspace_bytes > 0) {
    ASSERT_EQ(cudaMalloc(&workspace, plan.workspace_bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(workspace, 0xff, plan.workspace_bytes), cudaSuccess);  // NaN: every read slot must be written
  }
  const kiln::Error err = kiln::cudadev::launch_attention(p, plan, workspace, nullptr);
  const cudaError_t sync = cudaDeviceSynchronize();
  if (workspace != nullptr) {
    EXPECT_EQ(cudaFree(workspace), cudaSuccess);
  }
  ASSERT_EQ(err, kiln::Error::Ok) << kiln::last_error_message();
  ASSERT_EQ(sync, cudaSuccess) << cudaGetErrorString(sync);

  const auto got = host_values(out);
  for (float x : got) ASSERT_TRUE(std::isfinite(x)) << "non-finite output";
  expect_close(got, want, tolerance(dt), what + ": output");
  const int inf_rows = expect_lse_close(host_values(lse), want_lse, what + ": logsumexp");
  if (mask == Mask::Bool || mask == Mask::Input) {
    EXPECT_GT(inf_rows, 0) << "the mask was meant to hide a whole row";
  }
}

class CudaAttentionDecode : public ::testing::TestWithParam<DType> {};

TEST_P(CudaAttentionDecode, GemmaStepMatchesReference) {
  // Gemma 3 decode exactly: B=1, 8 query heads over 1 k/v head, 1 row, 1024 keys, head dim 256.
  int runs = 0;
  for (bool causal : {false, true})
    for (Mask mask : {Mask::None, Mask::Bool, Mask::Input, Mask::Float32}) {
      run_case(GetParam(), Shape{1, 8, 1, 1, 1024, 256, 256}, causal, mask, Layout::Contiguous, true,
               static_cast<uint32_t>(500 + runs));
      ++runs;
    }
  EXPECT_EQ(runs, 8);
}

TEST_P(CudaAttentionDecode, ShapesMatchReference) {
  const DType dt = GetParam();
  const int64_t dims[][2] = {{64, 64}, {128, 128}, {256, 256}, {64, 256}, {256, 128}};  // {E, Ev}
  int runs = 0, decode_runs = 0;
  for (int64_t group : {1, 2, 4, 8, 16})
    for (int64_t L : {1, 2})
      for (int64_t S : {1, 7, 33, 1024, 4097})
        for (const auto& d : dims) {
          // Masks, causal and layouts cycle over the cases so each meets every
          // group size, length and head dim without a full product.
          const Mask mask = static_cast<Mask>(runs % 4);
          const bool causal = (runs / 4) % 2 == 1;
          const Layout layout = static_cast<Layout>((runs / 2) % 3);  // the first three layouts
          const bool decode = group * L <= 16;
          run_case(dt, Shape{2, 2 * group, 2, L, S, d[0], d[1]}, causal, mask, layout, decode,
                   static_cast<uint32_t>(1000 + 11 * runs));
          ++runs;
          if (decode) ++decode_runs;
          if (::testing::Test::HasFatalFailure()) return;
        }
  EXPECT_EQ(runs, 5 * 2 * 5 * 5);
  EXPECT_EQ(decode_runs, 5 * 2 * 5 * 5 - 5 * 5);  // group 16 with L = 2 is 32 rows: the split-KV kernel
  // Key rows that 16-byte loads cannot read: the split-KV kernel, still right.
  for (int64_t S : {33, 1024})
    for (Mask mask : {Mask::None, Mask::Bool})
      run_case(dt, Shape{1, 8, 1, 1, S, 128, 128}, false, mask, Layout::MisalignedKeys, false,
               static_cast<uint32_t>(77 + S));
}

// Head dims that are multiples of 8 but not of 16: the decode kernel scores
// them with its scalar loops, not on tensor cores (whole k16 steps only), so
// both paths stay covered on sm_80+.
TEST_P(CudaAttentionDecode, HeadDimsOffTheTensorCoreStepMatchReference) {
  const int64_t dims[][2] = {{40, 40}, {24, 56}, {72, 64}, {248, 248}};  // {E, Ev}
  int runs = 0;
  for (const auto& d : dims)
    for (int64_t S : {33, 1024}) {
      const Mask mask = static_cast<Mask>(runs % 4);
      run_case(GetParam(), Shape{1, 8, 1, 1, S, d[0], d[1]}, runs % 3 == 1, mask, Layout::Contiguous, true,
               static_cast<uint32_t>(3000 + 7 * runs));
      ++runs;
      if (::testing::Test::HasFatalFailure()) return;
    }
  EXPECT_EQ(runs, 8);
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, CudaAttentionDecode, ::testing::Values(DType::Float16, DType::BFloat16),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

}  // namespace
