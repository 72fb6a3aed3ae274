#include "devices/cpu/quantized_rows.h"

namespace kiln::cpu {
namespace {

// The loops are written for the vectoriser, without reassociation flags: a
// dot keeps LANES independent partial sums per row (several vector registers,
// so consecutive multiply-adds do not wait on each other) and adds them up in
// a fixed order at the end, so a result does not depend on the instruction set
// beyond the rounding of fused multiply-adds.

template <typename W, int R, int LANES>
[[gnu::always_inline]] inline void dot_body(const W* w, int64_t k, const float* x, int64_t ldx, float* out) noexcept {
  float acc[R][LANES];
  for (int r = 0; r < R; ++r)
    for (int l = 0; l < LANES; ++l) acc[r][l] = 0.0f;
  const int64_t body = k - k % LANES;
  for (int64_t i = 0; i < body; i += LANES) {
    float wv[LANES];
    for (int l = 0; l < LANES; ++l) wv[l] = static_cast<float>(w[i + l]);
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * ldx + i;
      for (int l = 0; l < LANES; ++l) acc[r][l] += wv[l] * xr[l];
    }
  }
  for (int r = 0; r < R; ++r) {
    float sum = 0.0f;
    for (int l = 0; l < LANES; ++l) sum += acc[r][l];
    const float* xr = x + r * ldx;
    for (int64_t i = body; i < k; ++i) sum += static_cast<float>(w[i]) * xr[i];
    out[r] = sum;
  }
}

template <typename W, int LANES>
[[gnu::always_inline]] inline void dot_rows_body(const W* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                                 float* out) noexcept {
  switch (rows) {
    case 1: dot_body<W, 1, LANES>(w, k, x, ldx, out); break;
    case 2: dot_body<W, 2, LANES>(w, k, x, ldx, out); break;
    case 3: dot_body<W, 3, LANES>(w, k, x, ldx, out); break;
    default: dot_body<W, 4, LANES>(w, k, x, ldx, out); break;
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

// AVX-512 has 32 vector registers: 64 lanes are four per row, sixteen for
// four rows. AVX2 has 16: 32 lanes are four per row there.
[[gnu::target("avx512f,avx512bw")]] void dot_avx512(const float* w, int64_t k, const float* x, int64_t ldx,
                                                    int64_t rows, float* out) noexcept {
  dot_rows_body<float, 64>(w, k, x, ldx, rows, out);
}
[[gnu::target("avx2,fma")]] void dot_avx2(const float* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                          float* out) noexcept {
  dot_rows_body<float, 32>(w, k, x, ldx, rows, out);
}
void dot_baseline(const float* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept {
  dot_rows_body<float, 16>(w, k, x, ldx, rows, out);
}

[[gnu::target("avx512f,avx512bw")]] void int8_dot_avx512(const int8_t* w, int64_t k, const float* x, int64_t ldx,
                                                         int64_t rows, float* out) noexcept {
  dot_rows_body<int8_t, 64>(w, k, x, ldx, rows, out);
}
[[gnu::target("avx2,fma")]] void int8_dot_avx2(const int8_t* w, int64_t k, const float* x, int64_t ldx, int64_t rows,
                                               float* out) noexcept {
  dot_rows_body<int8_t, 32>(w, k, x, ldx, rows, out);
}
void int8_dot_baseline(const int8_t* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept {
  dot_rows_body<int8_t, 16>(w, k, x, ldx, rows, out);
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
