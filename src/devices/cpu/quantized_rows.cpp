#include "devices/cpu/quantized_rows.h"

#include <immintrin.h>

#include <cstring>
#include <type_traits>

namespace kiln::cpu {
namespace {

// The dots are written on GCC's generic vectors (vector_size), N floats a
// vector and U vectors a step, compiled per instruction set by the wrappers
// below: each row keeps U independent vector sums in registers (consecutive
// multiply-adds do not wait on each other) and adds them up in a fixed order
// at the end, so a result does not depend on the thread or the call, only on
// the instruction set's vector width. Plain loops over float arrays left the
// partial sums of several rows on the stack.

template <typename T, int N>
using Vec [[gnu::vector_size(N * sizeof(T))]] = T;

// Unaligned loads (an out-parameter: a vector return value would warn of
// the ABI of builds without AVX, -Wpsabi, though it is always inlined).
template <typename T, int N>
[[gnu::always_inline]] inline void load(Vec<T, N>& v, const T* p) noexcept {
  std::memcpy(&v, p, sizeof v);
}

template <typename W, int R, int N, int U>
[[gnu::always_inline]] inline void dot_body(const W* w, int64_t k, const float* x, int64_t ldx, float* out) noexcept {
  using F = Vec<float, N>;
  F acc[R][U];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < U; ++u) acc[r][u] = F{};
  constexpr int64_t kStep = int64_t{N} * U;
  const int64_t body = k - k % kStep;
  for (int64_t i = 0; i < body; i += kStep) {
    for (int u = 0; u < U; ++u) {
      F wv;
      if constexpr (std::is_same_v<W, float>) {
        load<float, N>(wv, w + i + u * N);
      } else {
        float widened[N];
        for (int l = 0; l < N; ++l) widened[l] = static_cast<float>(w[i + u * N + l]);
        load<float, N>(wv, widened);
      }
      for (int r = 0; r < R; ++r) {
        F xv;
        load<float, N>(xv, x + r * ldx + i + u * N);
        acc[r][u] += wv * xv;
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    F v = acc[r][0];
    for (int u = 1; u < U; ++u) v += acc[r][u];
    float sum = 0.0f;
    for (int l = 0; l < N; ++l) sum += v[l];
    const float* xr = x + r * ldx;
    for (int64_t i = body; i < k; ++i) sum += static_cast<float>(w[i]) * xr[i];
    out[r] = sum;
  }
}

template <typename W, int N, int U>
[[gnu::always_inline]] inline void dot_rows_body(const W* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                                 float* out) noexcept {
  switch (rows) {
    case 1: dot_body<W, 1, N, U>(w, k, x, ldx, out); break;
    case 2: dot_body<W, 2, N, U>(w, k, x, ldx, out); break;
    case 3: dot_body<W, 3, N, U>(w, k, x, ldx, out); break;
    default: dot_body<W, 4, N, U>(w, k, x, ldx, out); break;
  }
}

// AVX-512: the same sums in intrinsics (as small_gemm.cpp), where GCC 12's
// generic vectors spilled the partial sums of several rows and widened int8
// element by element.
[[gnu::target("avx512f,avx512bw")]] inline __m512 load16(const float* p) noexcept { return _mm512_loadu_ps(p); }
// The zero-masked forms: GCC 12's unmasked ones pass an undefined vector
// that -Wmaybe-uninitialized reports.
[[gnu::target("avx512f,avx512bw")]] inline __m512 load16(const int8_t* p) noexcept {
  const __m512i wide = _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm512_maskz_cvtepi32_ps(0xFFFF, wide);
}

[[gnu::target("avx512f,avx512bw")]] inline float lane_sum(__m512 v) noexcept {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0.0f;
  for (float x : lanes) sum += x;
  return sum;
}

template <typename W, int R>
[[gnu::target("avx512f,avx512bw")]] void dot512(const W* w, int64_t k, const float* x, int64_t ldx,
                                                float* out) noexcept {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64) {
    for (int u = 0; u < 4; ++u) {
      const __m512 wv = load16(w + i + 16 * u);
      for (int r = 0; r < R; ++r) acc[r][u] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + r * ldx + i + 16 * u), acc[r][u]);
    }
  }
  for (; i + 16 <= k; i += 16) {
    const __m512 wv = load16(w + i);
    for (int r = 0; r < R; ++r) acc[r][0] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + r * ldx + i), acc[r][0]);
  }
  for (int r = 0; r < R; ++r) {
    const __m512 v = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
    float sum = lane_sum(v);
    const float* xr = x + r * ldx;
    for (int64_t j = i; j < k; ++j) sum += static_cast<float>(w[j]) * xr[j];
    out[r] = sum;
  }
}

template <typename W>
[[gnu::target("avx512f,avx512bw")]] void dot512_rows(const W* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                                     float* out) noexcept {
  switch (rows) {
    case 1: dot512<W, 1>(w, k, x, ldx, out); break;
    case 2: dot512<W, 2>(w, k, x, ldx, out); break;
    case 3: dot512<W, 3>(w, k, x, ldx, out); break;
    default: dot512<W, 4>(w, k, x, ldx, out); break;
  }
}

// int4 rows dotted without writing the dequantized row: within group g,
// sum_k x[k] * ((c[k] - 8) * s + z) = s * sum_k x[k] * c[k] + (z - 8 s) * sum_k x[k],
// so the codes are only widened to float and multiplied with x (in the
// deinterleaved order), one scale multiply-add per group and vector, and the
// zero term comes from the caller's per-group sums of x. Groups of a multiple
// of 32 codes (16 bytes a vector step). Mathematically the dequantized
// product; rounded differently in float32's last bits.
template <int R>
[[gnu::target("avx512f,avx512bw")]] void int4_dot512(const uint8_t* bytes, int64_t k, int64_t group,
                                                     const float* scale_zero, const float* x, int64_t ldx,
                                                     const float* xsum, float* out) noexcept {
  const int64_t groups = k / group, half = group / 2, odd_at = k / 2;
  const __m512i low4 = _mm512_set1_epi32(15);
  __m512 total[R];
  float offset[R];
  for (int r = 0; r < R; ++r) {
    total[r] = _mm512_setzero_ps();
    offset[r] = 0.0f;
  }
  for (int64_t g = 0; g < groups; ++g) {
    const float s = scale_zero[2 * g], z = scale_zero[2 * g + 1];
    __m512 acc[R][4];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_setzero_ps();
    const int64_t j0 = g * half, j1 = j0 + half;
    int64_t j = j0;
    for (; j + 32 <= j1; j += 32) {
      for (int u = 0; u < 2; ++u) {
        const __m512i b =
            _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + j + 16 * u)));
        const __m512 lo = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_and_si512(b, low4));
        const __m512 hi = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_srli_epi32(0xFFFF, b, 4));
        for (int r = 0; r < R; ++r) {
          const float* xr = x + r * ldx;
          acc[r][2 * u] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xr + j + 16 * u), acc[r][2 * u]);
          acc[r][2 * u + 1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xr + odd_at + j + 16 * u), acc[r][2 * u + 1]);
        }
      }
    }
    if (j < j1) {  // one more step of 16 bytes
      const __m512i b = _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + j)));
      const __m512 lo = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_and_si512(b, low4));
      const __m512 hi = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_srli_epi32(0xFFFF, b, 4));
      for (int r = 0; r < R; ++r) {
        const float* xr = x + r * ldx;
        acc[r][0] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xr + j), acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xr + odd_at + j), acc[r][1]);
      }
    }
    const __m512 sv = _mm512_set1_ps(s);
    for (int r = 0; r < R; ++r) {
      const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
      total[r] = _mm512_fmadd_ps(sv, sum, total[r]);
      offset[r] += (z - 8.0f * s) * xsum[r * groups + g];
    }
  }
  for (int r = 0; r < R; ++r) out[r] = lane_sum(total[r]) + offset[r];
}

[[gnu::target("avx512f,avx512bw")]] void int4_dot_avx512(const uint8_t* bytes, int64_t k, int64_t group,
                                                         const float* scale_zero, const float* x, int64_t ldx,
                                                         const float* xsum, int64_t rows, float* out) noexcept {
  switch (rows) {
    case 1: int4_dot512<1>(bytes, k, group, scale_zero, x, ldx, xsum, out); break;
    case 2: int4_dot512<2>(bytes, k, group, scale_zero, x, ldx, xsum, out); break;
    case 3: int4_dot512<3>(bytes, k, group, scale_zero, x, ldx, xsum, out); break;
    default: int4_dot512<4>(bytes, k, group, scale_zero, x, ldx, xsum, out); break;
  }
}

[[gnu::always_inline]] inline void unpack_int4_body(const uint8_t* bytes, int64_t k, int64_t group,
                                                    const float* scale_zero, float* out) noexcept {
  const int64_t groups = k / group;
  if (int4_deinterleaved(group)) {
    // An even group holds whole bytes: both codes of a byte share its scale.
    const int64_t half = group / 2;
    float* even = out;
    float* odd = out + k / 2;
    for (int64_t g = 0; g < groups; ++g) {
      const float s = scale_zero[2 * g], z = scale_zero[2 * g + 1];
      const uint8_t* b = bytes + g * half;
      float* lo = even + g * half;
      float* hi = odd + g * half;
      for (int64_t j = 0; j < half; ++j) {
        lo[j] = (static_cast<float>(b[j] & 15) - 8.0f) * s + z;
        hi[j] = (static_cast<float>(b[j] >> 4) - 8.0f) * s + z;
      }
    }
    return;
  }
  for (int64_t g = 0; g < groups; ++g) {
    const float s = scale_zero[2 * g], z = scale_zero[2 * g + 1];
    for (int64_t i = g * group; i < (g + 1) * group; ++i) {
      const int code = (bytes[i >> 1] >> ((i & 1) * 4)) & 15;
      out[i] = (static_cast<float>(code) - 8.0f) * s + z;
    }
  }
}

[[gnu::always_inline]] inline void int8_to_float_body(const int8_t* w, int64_t k, float* out) noexcept {
  for (int64_t i = 0; i < k; ++i) out[i] = static_cast<float>(w[i]);
}

// AVX2's 16 registers hold four rows' sums of two vectors a step.
[[gnu::target("avx512f,avx512bw")]] void dot_avx512(const float* w, int64_t k, const float* x, int64_t ldx,
                                                    int64_t rows, float* out) noexcept {
  dot512_rows<float>(w, k, x, ldx, rows, out);
}
[[gnu::target("avx2,fma")]] void dot_avx2(const float* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                          float* out) noexcept {
  dot_rows_body<float, 8, 2>(w, k, x, ldx, rows, out);
}
void dot_baseline(const float* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept {
  dot_rows_body<float, 4, 2>(w, k, x, ldx, rows, out);
}

[[gnu::target("avx512f,avx512bw")]] void int8_dot_avx512(const int8_t* w, int64_t k, const float* x, int64_t ldx,
                                                         int64_t rows, float* out) noexcept {
  dot512_rows<int8_t>(w, k, x, ldx, rows, out);
}
[[gnu::target("avx2,fma")]] void int8_dot_avx2(const int8_t* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                               float* out) noexcept {
  dot_rows_body<int8_t, 8, 2>(w, k, x, ldx, rows, out);
}
void int8_dot_baseline(const int8_t* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept {
  dot_rows_body<int8_t, 4, 2>(w, k, x, ldx, rows, out);
}

[[gnu::target("avx512f,avx512bw")]] void unpack_avx512(const uint8_t* bytes, int64_t k, int64_t group,
                                                       const float* scale_zero, float* out) noexcept {
  unpack_int4_body(bytes, k, group, scale_zero, out);
}
[[gnu::target("avx2,fma")]] void unpack_avx2(const uint8_t* bytes, int64_t k, int64_t group, const float* scale_zero,
                                             float* out) noexcept {
  unpack_int4_body(bytes, k, group, scale_zero, out);
}
void unpack_baseline(const uint8_t* bytes, int64_t k, int64_t group, const float* scale_zero, float* out) noexcept {
  unpack_int4_body(bytes, k, group, scale_zero, out);
}

[[gnu::target("avx512f,avx512bw")]] void int8_to_float_avx512(const int8_t* w, int64_t k, float* out) noexcept {
  int8_to_float_body(w, k, out);
}
[[gnu::target("avx2,fma")]] void int8_to_float_avx2(const int8_t* w, int64_t k, float* out) noexcept {
  int8_to_float_body(w, k, out);
}
void int8_to_float_baseline(const int8_t* w, int64_t k, float* out) noexcept { int8_to_float_body(w, k, out); }

enum class Isa { Avx512, Avx2, Baseline };

Isa isa_for_this_cpu() noexcept {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
  return Isa::Baseline;
}

Isa isa() noexcept {
  static const Isa chosen = isa_for_this_cpu();
  return chosen;
}

template <typename Fn>
Fn pick(Fn avx512, Fn avx2, Fn baseline) noexcept {
  switch (isa()) {
    case Isa::Avx512: return avx512;
    case Isa::Avx2: return avx2;
    default: return baseline;
  }
}

}  // namespace

void unpack_int4_row(const uint8_t* bytes, int64_t k, int64_t group, const float* scale_zero, float* out) noexcept {
  static const auto fn = pick(unpack_avx512, unpack_avx2, unpack_baseline);
  fn(bytes, k, group, scale_zero, out);
}

bool int4_dot_rows_available(int64_t group) noexcept { return group % 32 == 0 && isa() == Isa::Avx512; }

void int4_dot_rows(const uint8_t* bytes, int64_t k, int64_t group, const float* scale_zero, const float* x, int64_t ldx,
                   const float* xsum, int64_t rows, float* out) noexcept {
  int4_dot_avx512(bytes, k, group, scale_zero, x, ldx, xsum, rows, out);
}

void order_like_int4(const float* x, int64_t k, int64_t group, float* out) noexcept {
  if (!int4_deinterleaved(group)) {
    for (int64_t i = 0; i < k; ++i) out[i] = x[i];
    return;
  }
  const int64_t half = k / 2;
  for (int64_t j = 0; j < half; ++j) {
    out[j] = x[2 * j];
    out[half + j] = x[2 * j + 1];
  }
}

void int8_to_float(const int8_t* w, int64_t k, float* out) noexcept {
  static const auto fn = pick(int8_to_float_avx512, int8_to_float_avx2, int8_to_float_baseline);
  fn(w, k, out);
}

void dot_rows(const float* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept {
  static const auto fn = pick(dot_avx512, dot_avx2, dot_baseline);
  fn(w, k, x, ldx, rows, out);
}

void int8_dot_rows(const int8_t* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept {
  static const auto fn = pick(int8_dot_avx512, int8_dot_avx2, int8_dot_baseline);
  fn(w, k, x, ldx, rows, out);
}

}  // namespace kiln::cpu
