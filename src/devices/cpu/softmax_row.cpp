#include "devices/cpu/softmax_row.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kiln::cpu {
namespace {

// Independent accumulators, one per vector lane: reductions written this way
// vectorise without reassociation flags (-ffast-math).
constexpr int kLanes = 16;

// e^x, vectorisable (no calls, no branches). Inputs below -87 (where e^x is
// subnormal) give 0, so -inf scores give exactly 0.
[[gnu::always_inline]] inline float exp_poly(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln 2 split so k * kLn2Hi is exact for the k that occur (|k| <= 127).
  constexpr float kLn2Hi = 0.693145751953125f;
  constexpr float kLn2Lo = 1.42860682030941723212e-6f;
  // Adding 1.5 * 2^23 rounds to the nearest integer and leaves it in the low
  // mantissa bits.
  constexpr float kRound = 12582912.0f;
  const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float t = xc * kLog2e + kRound;
  const float k = t - kRound;
  const float r = (xc - k * kLn2Hi) - k * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t ki = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kRound);
  const float two_k = std::bit_cast<float>((ki + 127) << 23);  // ki in [-126, 127]
  return x < -87.0f ? 0.0f : p * two_k;
}

// The body, compiled once per instruction set by the wrappers below.
[[gnu::always_inline]] inline float softmax_body(float* row, int64_t n) noexcept {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t body = n - n % kLanes;
  float lane_max[kLanes];
  for (int l = 0; l < kLanes; ++l) lane_max[l] = kNegInf;
  for (int64_t j = 0; j < body; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane_max[l] = row[j + l] > lane_max[l] ? row[j + l] : lane_max[l];
  float mx = kNegInf;
  for (int l = 0; l < kLanes; ++l) mx = lane_max[l] > mx ? lane_max[l] : mx;
  for (int64_t j = body; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  if (mx == kNegInf) {
    // Every position masked: no probability mass anywhere.
    for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    return kNegInf;
  }
  float lane_sum[kLanes] = {};
  for (int64_t j = 0; j < body; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float e = exp_poly(row[j + l] - mx);
      row[j + l] = e;
      lane_sum[l] += e;
    }
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lane_sum[l];
  for (int64_t j = body; j < n; ++j) {
    row[j] = exp_poly(row[j] - mx);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
  return mx + std::log(sum);
}

[[gnu::target("avx512f")]] float softmax_avx512(float* row, int64_t n) noexcept { return softmax_body(row, n); }
[[gnu::target("avx2,fma")]] float softmax_avx2(float* row, int64_t n) noexcept { return softmax_body(row, n); }
float softmax_baseline(float* row, int64_t n) noexcept { return softmax_body(row, n); }

using SoftmaxFn = float (*)(float*, int64_t) noexcept;

SoftmaxFn pick_for_this_cpu() noexcept {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return softmax_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return softmax_avx2;
  return softmax_baseline;
}

}  // namespace

float softmax_in_place(float* row, int64_t n) noexcept {
  static const SoftmaxFn fn = pick_for_this_cpu();
  return fn(row, n);
}

}  // namespace kiln::cpu
