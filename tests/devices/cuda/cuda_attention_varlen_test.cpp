// The attention kernels' sequence layout (AttentionParams past `causal`), as
// the flash / memory-efficient forward ops use it, called directly: packed
// variable-length batches through int32 offsets (a batch with no queries, one
// with no keys, one with more queries than keys), causal masks and sliding
// windows aligned to the top left or the bottom right, grouped-query heads,
// logsumexp by packed row ([H, total_q], +inf for a row that sees no key) or
// by batch row with +inf padding. The tensor-core kernel (when the device
// has it) and the tiled kernel both run every case against the
// double-precision reference, batch by batch.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
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

struct VarlenCase {
  int64_t Hq, Hk, E;
  std::vector<int64_t> lens_q, lens_k;
  bool causal, bottom_right;
  int64_t left, right;
  bool lse_packed;  // [Hq, total_q] with +inf for rows without keys; else [B, Hq, pad32(max_q)] with +inf padding
};

// Whether query i of a batch with `rows` queries and `keys` keys sees key j.
bool visible(const VarlenCase& c, int64_t rows, int64_t keys, int64_t i, int64_t j) {
  const int64_t diag = c.bottom_right ? keys - rows : 0;
  if (c.left >= 0 && j < i + diag - c.left) return false;
  if (c.right >= 0 && j > i + diag + c.right) return false;
  if (c.causal && j > i + diag) return false;
  return true;
}

class CudaAttentionSequenceLayout : public ::testing::TestWithParam<DType> {};

TEST_P(CudaAttentionSequenceLayout, MatchesReference) {
  const DType dt = GetParam();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  auto available = kiln::cudadev::mma_attention_available(0);
  ASSERT_TRUE(available.ok()) << kiln::last_error_message();
  const bool mma = available.value() && dt != DType::Float32;

  const VarlenCase cases[] = {
      // Bottom-right causal; batch 1 has 6 more queries than keys (its first rows see nothing).
      {4, 4, 64, {5, 70, 3}, {7, 64, 130}, true, true, -1, -1, true},
      // Grouped-query 4:1, a window on both sides, one query row in batch 1.
      {8, 2, 128, {65, 1, 17}, {65, 200, 9}, false, true, 10, 3, true},
      // Left window only; batch 1 has no queries, batch 2 no keys.
      {2, 1, 64, {130, 0, 40}, {100, 5, 0}, false, true, 20, -1, true},
      // Top-left causal, logsumexp per batch row padded to 32 (as the memory-efficient kernel).
      {4, 4, 64, {33, 90}, {50, 90}, true, false, -1, -1, false},
      // Bottom-right causal with a left window, padded logsumexp.
      {2, 2, 128, {70, 9, 64}, {80, 9, 200}, true, true, 7, -1, false},
  };
  int runs = 0;
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ++ci) {
    const VarlenCase& c = cases[ci];
    const int64_t B = static_cast<int64_t>(c.lens_q.size());
    std::vector<int32_t> cu_q{0}, cu_k{0};
    int64_t max_q = 0, max_k = 0;
    for (int64_t b = 0; b < B; ++b) {
      cu_q.push_back(cu_q.back() + static_cast<int32_t>(c.lens_q[b]));
      cu_k.push_back(cu_k.back() + static_cast<int32_t>(c.lens_k[b]));
      max_q = std::max(max_q, c.lens_q[b]);
      max_k = std::max(max_k, c.lens_k[b]);
    }
    const int64_t tq = cu_q.back(), tk = cu_k.back(), E = c.E, Hq = c.Hq, Hk = c.Hk;
    const std::string what = std::string(kiln::dtype_name(dt)) + " case " + std::to_string(ci);
    SCOPED_TRACE(what);
    const uint32_t seed = static_cast<uint32_t>(500 + 11 * ci);
    // Packed [total, heads, E], row-major.
    std::vector<float> q = random_values(static_cast<size_t>(tq * Hq * E), seed);
    std::vector<float> k = random_values(static_cast<size_t>(tk * Hk * E), seed + 1);
    std::vector<float> v = random_values(static_cast<size_t>(tk * Hk * E), seed + 2);
    for (auto* x : {&q, &k, &v})
      for (float& f : *x) f = round_to(2.0f * f, dt);
    const double scale = 0.7 / std::sqrt(double(E));

    // The reference, one dense batch at a time, the mask as a -inf bias.
    std::vector<float> want_out(static_cast<size_t>(tq * Hq * E), 0.0f);
    std::vector<std::vector<float>> want_lse(static_cast<size_t>(B));  // [Hq, rows] per batch
    for (int64_t b = 0; b < B; ++b) {
      const int64_t L = c.lens_q[b], S = c.lens_k[b];
      if (L == 0) continue;
      const Shape s{1, Hq, Hk, L, S, E, E};
      std::vector<float> qb(static_cast<size_t>(Hq * L * E)), kb(static_cast<size_t>(Hk * S * E)),
          vb(static_cast<size_t>(Hk * S * E)), bias(static_cast<size_t>(Hq * L * S));
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t e = 0; e < E; ++e) qb[(h * L + i) * E + e] = q[((cu_q[b] + i) * Hq + h) * E + e];
      for (int64_t h = 0; h < Hk; ++h)
        for (int64_t j = 0; j < S; ++j)
          for (int64_t e = 0; e < E; ++e) {
            kb[(h * S + j) * E + e] = k[((cu_k[b] + j) * Hk + h) * E + e];
            vb[(h * S + j) * E + e] = v[((cu_k[b] + j) * Hk + h) * E + e];
          }
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < S; ++j) bias[(h * L + i) * S + j] = visible(c, L, S, i, j) ? 0.0f : -INFINITY;
      std::vector<float> ob, lb;
      ref_attention(s, qb, kb, vb, bias, false, scale, ob, lb);
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t e = 0; e < E; ++e) want_out[((cu_q[b] + i) * Hq + h) * E + e] = ob[(h * L + i) * E + e];
      want_lse[b] = lb;
    }

    Handle hq(device_tensor(q, {tq, Hq, E}, dt));
    Handle hk(device_tensor(k, {tk, Hk, E}, dt));
    Handle hv(device_tensor(v, {tk, Hk, E}, dt));
    Handle hcq(device_empty({B + 1}, DType::Int32));
    Handle hck(device_empty({B + 1}, DType::Int32));
    ASSERT_EQ(cudaMemcpy(data_of(hcq), cu_q.data(), cu_q.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(data_of(hck), cu_k.data(), cu_k.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    const int64_t lse_len = (max_q + 31) / 32 * 32;
    const std::vector<int64_t> lse_shape = c.lse_packed ? std::vector<int64_t>{Hq, tq} : std::vector<int64_t>{B, Hq, lse_len};

    for (bool tensor_core : {true, false}) {
      if (tensor_core && !mma) continue;
      const std::string kernel = tensor_core ? "tensor-core kernel" : "tiled kernel";
      SCOPED_TRACE(kernel);
      Handle out(device_empty({tq, Hq, E}, dt));  // NaN-filled: unwritten rows show
      Handle lse(device_empty(lse_shape, DType::Float32));
      AttentionParams p;
      p.q = data_of(hq);
      p.k = data_of(hk);
      p.v = data_of(hv);
      p.out = data_of(out);
      p.lse = static_cast<float*>(data_of(lse));
      p.dtype = dt;
      p.B = B;
      p.Hq = Hq;
      p.Hk = Hk;
      p.L = max_q;
      p.S = max_k;
      p.E = p.Ev = E;
      p.scale = static_cast<float>(scale);
      p.causal = c.causal;
      p.bottom_right = c.bottom_right;
      p.window_left = c.left;
      p.window_right = c.right;
      p.cu_seqlens_q = static_cast<const int32_t*>(data_of(hcq));
      p.cu_seqlens_k = static_cast<const int32_t*>(data_of(hck));
      p.q_rows = tq;
      p.k_rows = tk;
      const int64_t q_str[4] = {0, E, Hq * E, 1}, kv_str[4] = {0, E, Hk * E, 1};
      for (int d = 0; d < 4; ++d) {
        p.q_strides[d] = p.out_strides[d] = q_str[d];
        p.k_strides[d] = p.v_strides[d] = kv_str[d];
      }
      if (c.lse_packed) {
        p.lse_packed = true;
        p.lse_masked = INFINITY;
        p.lse_strides[0] = 0;
        p.lse_strides[1] = tq;
        p.lse_strides[2] = 1;
      } else {
        p.lse_rows = lse_len;
        p.lse_strides[0] = Hq * lse_len;
        p.lse_strides[1] = lse_len;
        p.lse_strides[2] = 1;
      }
      AttentionPlan plan;  // default: the tiled kernel
      if (tensor_core) {
        plan = kiln::cudadev::plan_attention(p, sms, true);
        ASSERT_TRUE(plan.tensor_core) << (kiln::cudadev::mma_attention_unsupported(p)
                                              ? kiln::cudadev::mma_attention_unsupported(p)
                                              : "the planner should pick the tensor-core kernel");
      }
      ASSERT_EQ(kiln::cudadev::launch_attention(p, plan, nullptr, nullptr), kiln::Error::Ok)
          << kiln::last_error_message();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
      expect_close(host_values(out), want_out, tolerance(dt), what + ", " + kernel + ": output");

      // logsumexp: finite rows close to the reference; rows without keys at
      // lse_masked (+inf packed, -inf per batch row); padding +inf.
      const std::vector<float> got = host_values(lse);
      std::vector<float> got_finite, want_finite;
      int masked_rows = 0;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h) {
          const int64_t rows = c.lens_q[b];
          const int64_t end = c.lse_packed ? rows : lse_len;
          for (int64_t i = 0; i < end; ++i) {
            const float g = c.lse_packed ? got[h * tq + cu_q[b] + i] : got[(b * Hq + h) * lse_len + i];
            if (i >= rows) {
              EXPECT_TRUE(std::isinf(g) && g > 0) << what << ", " << kernel << ": lse padding b" << b << " h" << h
                                                  << " row " << i << " = " << g;
              continue;
            }
            const float w = want_lse[b][h * rows + i];
            if (std::isinf(w)) {
              ++masked_rows;
              EXPECT_EQ(g, c.lse_packed ? INFINITY : -INFINITY)
                  << what << ", " << kernel << ": lse of keyless row b" << b << " h" << h << " row " << i;
            } else {
              got_finite.push_back(g);
              want_finite.push_back(w);
            }
          }
        }
      expect_close(got_finite, want_finite, 1e-3, what + ", " + kernel + ": logsumexp");
      if (ci == 0 || ci == 2) {
        EXPECT_GT(masked_rows, 0) << "the case was meant to have rows without keys";
      }
      ++runs;
    }
  }
  EXPECT_GE(runs, 5);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaAttentionSequenceLayout,
                         ::testing::Values(DType::Float16, DType::BFloat16, DType::Float32),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

}  // namespace
