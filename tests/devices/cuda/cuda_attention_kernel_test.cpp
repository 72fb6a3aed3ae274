// The attention kernels called directly (not through the SDPA shims): the
// planner's choice, and the tensor-core kernel against the double-precision
// reference over the shapes it takes (head dim 64, 128 and 256, query lengths
// that are and are not multiples of its 64-row tile, S != L both ways,
// grouped-query heads up to 8:1, causal, boolean / half / float32 masks with
// fully masked rows and fully masked key tiles, strided q/k/v/out). The scalar
// tiled kernel runs on the same inputs as a second opinion.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "cuda_test_util.h"
#include "devices/cuda/kernels/attention_kernel.h"
#include "devices/cuda/kernels/attention_mma_kernel.h"

namespace {

using namespace kiln_test;
using kiln::DType;
using kiln::cudadev::AttentionParams;
using kiln::cudadev::AttentionPlan;

// A well-formed float16 problem at 16-byte-aligned fake addresses, for the
// planner (which never dereferences them): 16 query heads over Hk k/v heads.
AttentionParams planner_params(int64_t L, int64_t S, int64_t E, int64_t Hq = 16, int64_t Hk = 16) {
  AttentionParams p;
  p.q = p.k = p.v = reinterpret_cast<const void*>(uintptr_t{0x10000});
  p.out = reinterpret_cast<void*>(uintptr_t{0x20000});
  p.dtype = DType::Float16;
  p.B = 1;
  p.Hq = Hq;
  p.Hk = Hk;
  p.L = L;
  p.S = S;
  p.E = p.Ev = E;
  const int64_t q_str[4] = {Hq * L * E, L * E, E, 1}, kv_str[4] = {Hk * S * E, S * E, E, 1};
  for (int d = 0; d < 4; ++d) {
    p.q_strides[d] = p.out_strides[d] = q_str[d];
    p.k_strides[d] = p.v_strides[d] = kv_str[d];
  }
  return p;
}

TEST(CudaAttentionPlanner, TensorCoresForHalfTypesWithHeadDim64To256) {
  const int sms = 132;
  AttentionParams p = planner_params(512, 512, 64);
  EXPECT_TRUE(kiln::cudadev::plan_attention(p, sms, true).tensor_core);
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, false).tensor_core) << "device without sm_80 code";
  p.dtype = DType::BFloat16;
  EXPECT_TRUE(kiln::cudadev::plan_attention(p, sms, true).tensor_core);
  p.dtype = DType::Float32;
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core)
      << "float32 stays on the tiled kernel";

  p = planner_params(300, 700, 128);
  EXPECT_TRUE(kiln::cudadev::plan_attention(p, sms, true).tensor_core);
  // Gemma-style head dim 256: prefill with 8 query heads over 1 k/v head.
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (int64_t len : {512, 2048, 17}) {
      p = planner_params(len, len, 256, 8, 1);
      p.dtype = dt;
      p.causal = true;
      EXPECT_EQ(kiln::cudadev::mma_attention_unsupported(p), nullptr) << "L=S=" << len;
      EXPECT_TRUE(kiln::cudadev::plan_attention(p, sms, true).tensor_core) << "head dim 256, L=S=" << len;
    }
  p = planner_params(300, 300, 256);
  p.Ev = 128;
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core) << "E 256 != Ev 128";
  p = planner_params(300, 300, 96);
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core) << "head dim 96";
  p = planner_params(300, 300, 64);
  p.Ev = 128;
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core) << "E != Ev";

  p = planner_params(300, 300, 64);
  p.k_strides[2] = 68;  // rows no longer 16-byte aligned
  EXPECT_NE(kiln::cudadev::mma_attention_unsupported(p), nullptr);
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core);
  p = planner_params(300, 300, 64);
  p.q = reinterpret_cast<const void*>(uintptr_t{0x10002});
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core) << "misaligned q";
  p = planner_params(300, 300, 64);
  p.v_strides[3] = 2;
  EXPECT_FALSE(kiln::cudadev::plan_attention(p, sms, true).tensor_core) << "strided head dim";

  // Decode (1 query row, 16 heads: a tiny tiled grid) takes the decode kernel
  // (cuda_attention_decode_test.cpp has its rules).
  p = planner_params(1, 4096, 64);
  const AttentionPlan decode = kiln::cudadev::plan_attention(p, sms, true);
  EXPECT_FALSE(decode.tensor_core);
  EXPECT_TRUE(decode.decode);
  EXPECT_GE(decode.splits, 1);
  // ... but a query just past the split limit takes the tensor cores.
  p = planner_params(17, 4096, 64);
  EXPECT_TRUE(kiln::cudadev::plan_attention(p, sms, true).tensor_core);
  // Gemma-style decode (1 row against a 1024-key cache, 8 query heads over 1
  // k/v head, head dim 256): the decode kernel, in several chunks so the grid
  // is not 1 block, and its workspace holds every chunk's partials.
  p = planner_params(1, 1024, 256, 8, 1);
  const AttentionPlan gemma_decode = kiln::cudadev::plan_attention(p, sms, true);
  EXPECT_FALSE(gemma_decode.tensor_core);
  EXPECT_TRUE(gemma_decode.decode);
  EXPECT_GT(gemma_decode.splits, 1);
  EXPECT_GE(gemma_decode.splits * gemma_decode.chunk, 1024);
  EXPECT_GE(gemma_decode.workspace_bytes,
            sizeof(float) * static_cast<size_t>(8 * gemma_decode.splits * (256 + 2)));

  // The launcher refuses a tensor-core plan the call does not fit.
  p = planner_params(300, 300, 96);
  AttentionPlan forced;
  forced.tensor_core = true;
  EXPECT_EQ(kiln::cudadev::launch_attention(p, forced, nullptr, nullptr), kiln::Error::InvalidArgument);
  EXPECT_NE(kiln::last_error_message().find("head dims"), std::string::npos) << kiln::last_error_message();
}

enum class Mask { None, Bool, Half, Float32 };

const char* mask_name(Mask m) {
  switch (m) {
    case Mask::None:
      return "no mask";
    case Mask::Bool:
      return "bool keep-mask [L,S]";
    case Mask::Half:
      return "additive bias [B,1,L,S] in the input dtype";
    default:
      return "additive float32 bias [1,Hq,L,S]";
  }
}

class CudaAttentionTensorCores : public ::testing::TestWithParam<DType> {};

TEST_P(CudaAttentionTensorCores, MatchesReference) {
  const DType dt = GetParam();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto available = kiln::cudadev::mma_attention_available(0);
  ASSERT_TRUE(available.ok()) << kiln::last_error_message();
  if (!available.value()) {
    int major = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
    ASSERT_LT(major, 8)
        << "an sm_80+ GPU, but this build has no sm_80+ code for it (CMAKE_CUDA_ARCHITECTURES)";
    GTEST_SKIP() << "the tensor-core kernel needs compute capability 8.0+";
  }

  struct Case {
    int64_t B, Hq, Hk, L, S;
  };
  const Case cases[] = {
      {1, 2, 2, 64, 64},    // exactly one query tile and one key tile
      {2, 4, 2, 100, 100},  // grouped-query (2 query heads per k/v head), partial tiles
      {1, 2, 1, 130, 77},   // L > S (upper-left causal: late rows see every key)
      {1, 2, 2, 70, 200},   // L < S
      {1, 3, 3, 257, 257},  // 5 query tiles, the last with one row
      {1, 1, 1, 17, 300},   // just past the split-KV query limit
      {1, 8, 1, 96, 160},   // grouped-query 8:1, as Gemma's (one k/v head)
  };
  int runs = 0;
  for (int64_t E : {64, 128, 256})
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ++ci)
      for (bool causal : {false, true})
        for (Mask mask : {Mask::None, Mask::Bool, Mask::Half, Mask::Float32}) {
          const Case& c = cases[ci];
          const Shape s{c.B, c.Hq, c.Hk, c.L, c.S, E, E};
          const std::string what = std::string(kiln::dtype_name(dt)) + " B=" + std::to_string(s.B) +
                                   " Hq=" + std::to_string(s.Hq) + " Hk=" + std::to_string(s.Hk) +
                                   " L=" + std::to_string(s.L) + " S=" + std::to_string(s.S) +
                                   " E=" + std::to_string(E) + (causal ? " causal, " : ", ") +
                                   mask_name(mask);
          SCOPED_TRACE(what);
          const uint32_t seed = static_cast<uint32_t>(100 + 7 * ci + E);
          std::vector<float> q = random_values(static_cast<size_t>(s.B * s.Hq * s.L * E), seed);
          std::vector<float> k = random_values(static_cast<size_t>(s.B * s.Hk * s.S * E), seed + 1);
          std::vector<float> v = random_values(static_cast<size_t>(s.B * s.Hk * s.S * E), seed + 2);
          for (auto* x : {&q, &k, &v})
            for (float& f : *x) f = round_to(2.0f * f, dt);  // wider scores: a peakier softmax
          // Layouts: q (and out) [B, L, H, E] in memory on odd cases, as after a
          // projection + transpose; k/v sequence-major [B, S, H, E] on even ones.
          const bool q_t = ci % 2 == 1, kv_t = ci % 2 == 0;
          const std::vector<int64_t> q_str =
              q_t ? std::vector<int64_t>{s.L * s.Hq * E, E, s.Hq * E, 1} : std::vector<int64_t>{};
          const std::vector<int64_t> kv_str =
              kv_t ? std::vector<int64_t>{s.S * s.Hk * E, E, s.Hk * E, 1} : std::vector<int64_t>{};
          Handle hq(device_tensor(q, {s.B, s.Hq, s.L, E}, dt, q_str));
          Handle hk(device_tensor(k, {s.B, s.Hk, s.S, E}, dt, kv_str));
          Handle hv(device_tensor(v, {s.B, s.Hk, s.S, E}, dt, kv_str));

          // The mask on the device and as a dense [B, Hq, L, S] additive reference.
          std::vector<float> dense;
          Handle hmask;
          std::vector<int64_t> mask_strides;  // broadcast to [B, Hq, L, S]
          DType mask_dtype = DType::Float32;
          if (mask == Mask::Bool) {
            // Row 5 sees nothing; keys 64..127 (a whole key tile) are hidden
            // from every row; a scatter of other keys too.
            std::vector<float> keep(static_cast<size_t>(s.L * s.S));
            for (int64_t i = 0; i < s.L; ++i)
              for (int64_t j = 0; j < s.S; ++j)
                keep[i * s.S + j] = (i == 5 || j / 64 == 1 || (3 * i + j) % 7 == 0) ? 0.0f : 1.0f;
            dense.resize(static_cast<size_t>(s.B * s.Hq * s.L * s.S));
            for (size_t x = 0; x < dense.size(); ++x)
              dense[x] = keep[x % keep.size()] != 0.0f ? 0.0f : -INFINITY;
            hmask.h = device_tensor(keep, {s.L, s.S}, DType::Bool);
            mask_strides = {0, 0, s.S, 1};
            mask_dtype = DType::Bool;
          } else if (mask == Mask::Half) {
            // Row 3 fully -inf; keys 128..191 -inf; a scatter of -inf.
            std::vector<float> bias = random_values(static_cast<size_t>(s.B * s.L * s.S), seed + 3);
            for (int64_t b = 0; b < s.B; ++b)
              for (int64_t i = 0; i < s.L; ++i)
                for (int64_t j = 0; j < s.S; ++j) {
                  float& x = bias[(b * s.L + i) * s.S + j];
                  x = (i == 3 || j / 64 == 2 || (i + j + b) % 13 == 0) ? -INFINITY : round_to(x, dt);
                }
            dense.resize(static_cast<size_t>(s.B * s.Hq * s.L * s.S));
            for (int64_t b = 0; b < s.B; ++b)
              for (int64_t h = 0; h < s.Hq; ++h)
                for (int64_t x = 0; x < s.L * s.S; ++x)
                  dense[(b * s.Hq + h) * s.L * s.S + x] = bias[b * s.L * s.S + x];
            hmask.h = device_tensor(bias, {s.B, 1, s.L, s.S}, dt);
            mask_strides = {s.L * s.S, 0, s.S, 1};
            mask_dtype = dt;
          } else if (mask == Mask::Float32) {
            std::vector<float> bias = random_values(static_cast<size_t>(s.Hq * s.L * s.S), seed + 4);
            for (int64_t h = 0; h < s.Hq; ++h)
              for (int64_t i = 0; i < s.L; ++i)
                for (int64_t j = 0; j < s.S; ++j)
                  if ((j + 2 * i + h) % 17 == 0) bias[(h * s.L + i) * s.S + j] = -INFINITY;
            dense.resize(static_cast<size_t>(s.B * s.Hq * s.L * s.S));
            for (size_t x = 0; x < dense.size(); ++x) dense[x] = bias[x % bias.size()];
            hmask.h = device_tensor(bias, {1, s.Hq, s.L, s.S}, DType::Float32);
            mask_strides = {0, s.L * s.S, s.S, 1};
          }
          std::vector<float> want, want_lse;
          const double scale = 0.7 / std::sqrt(double(E));
          ref_attention(s, q, k, v, dense, causal, scale, want, want_lse);

          for (bool tensor_core : {true, false}) {
            const std::string kernel = tensor_core ? "tensor-core kernel" : "tiled kernel";
            SCOPED_TRACE(kernel);
            Handle out(device_empty({s.B, s.Hq, s.L, E}, dt, q_str));  // NaN-filled: unwritten shows
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
            p.E = p.Ev = E;
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
            AttentionPlan plan;  // default: the tiled kernel
            if (tensor_core) {
              plan = kiln::cudadev::plan_attention(p, sms, true);
              ASSERT_TRUE(plan.tensor_core) << "the planner should pick the tensor-core kernel; "
                                            << (kiln::cudadev::mma_attention_unsupported(p)
                                                    ? kiln::cudadev::mma_attention_unsupported(p)
                                                    : "it says the call fits");
            }
            ASSERT_EQ(kiln::cudadev::launch_attention(p, plan, nullptr, nullptr), kiln::Error::Ok)
                << kiln::last_error_message();
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
            const auto got = host_values(out);
            expect_close(got, want, tolerance(dt), what + ", " + kernel + ": output");
            const int inf_rows = expect_lse_close(host_values(lse), want_lse, what + ", " + kernel + ": logsumexp");
            // A fully masked row is zeros (and the expect_close above saw them).
            if (mask == Mask::Bool || mask == Mask::Half) {
              EXPECT_GT(inf_rows, 0) << "the mask was meant to hide a whole row";
            }
          }
          ++runs;
        }
  EXPECT_EQ(runs, 3 * 7 * 2 * 4);
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, CudaAttentionTensorCores,
                         ::testing::Values(DType::Float16, DType::BFloat16),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

}  // namespace
