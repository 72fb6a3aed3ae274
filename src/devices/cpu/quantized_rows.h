// Row kernels of the weight-only quantized products (int4_linear,
// _weight_int8pack_mm): a weight row's codes widened to float32, and dots of
// a weight row with a few activation rows. The decode step of an LLM (one to
// four activation rows) is bound by reading the weight once, so these work on
// one weight row at a time, in buffers that stay in L1/L2, and never on the
// whole dequantized weight. Compiled for AVX-512, AVX2+FMA and the baseline,
// picked once for this CPU (as softmax_row.cpp). Thread-safe, no allocation.
#pragma once

#include <cstdint>

namespace kiln::cpu {

/// The most activation rows dot_rows and int8_dot_rows take.
inline constexpr int64_t kQuantizedDotMaxRows = 4;

/// Whether int4 rows of group size `group` are unpacked deinterleaved (even
/// group: the codes of even k first, then those of odd k) rather than in k
/// order (odd group, where one byte's two codes may lie in two groups).
inline bool int4_deinterleaved(int64_t group) noexcept { return group % 2 == 0; }

/// One weight row of k 4-bit codes (k even; byte j holds k = 2j in its low
/// nibble, 2j + 1 in its high one) as floats (code - 8) * scale + zero, with
/// (scale, zero) = (scale_zero[2g], scale_zero[2g + 1]) for group g = k / group.
/// Written in int4_deinterleaved(group)'s order: out[j] = w[2j] and
/// out[k/2 + j] = w[2j + 1] when deinterleaved, else out[i] = w[i].
void unpack_int4_row(const uint8_t* bytes, int64_t k, int64_t group, const float* scale_zero, float* out) noexcept;

/// An activation row (k floats, k order) in the order unpack_int4_row writes
/// the weight for `group`, so dots of the two are the same products.
void order_like_int4(const float* x, int64_t k, int64_t group, float* out) noexcept;

/// Whether int4_dot_rows takes groups of `group` codes on this CPU (AVX-512,
/// group a multiple of 32); else unpack_int4_row and dot_rows give the same.
bool int4_dot_rows_available(int64_t group) noexcept;

/// out[r] = sum_i w[i] * x[r * ldx + i] for the int4 row unpack_int4_row
/// would write (same arguments), without writing it: x's rows in
/// order_like_int4's order, xsum[r * (k / group) + g] the sum of row r's
/// values in group g. Only where int4_dot_rows_available(group).
void int4_dot_rows(const uint8_t* bytes, int64_t k, int64_t group, const float* scale_zero, const float* x, int64_t ldx,
                   const float* xsum, int64_t rows, float* out) noexcept;

/// k int8 values as floats.
void int8_to_float(const int8_t* w, int64_t k, float* out) noexcept;

/// out[r] = sum_i w[i] * x[r * ldx + i] for r < rows, 1 <= rows <= kQuantizedDotMaxRows.
void dot_rows(const float* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept;

/// The same with an int8 weight row, each value widened to float.
void int8_dot_rows(const int8_t* w, int64_t k, const float* x, int64_t ldx, int64_t rows, float* out) noexcept;

}  // namespace kiln::cpu
