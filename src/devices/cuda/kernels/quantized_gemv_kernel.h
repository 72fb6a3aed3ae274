// Decode-step products with weight-only quantized weights: out (M x N) =
// x (M x K) @ W^T for M <= kQuantizedGemvMaxRows, where W's rows are stored
// as int8 codes with a scale a row (_weight_int8pack_mm) or a group of K
// (Kiln's int8_linear), or as 4-bit codes two a byte with a scale and zero
// point per group of K (Kiln's int4_linear).
//
// Like the float GEMV (gemv_kernel.h) every weight byte is read once, in
// 16-byte loads that make each warp's load one contiguous 512-byte stretch of
// a row, so the time is the packed bytes over the memory bandwidth as long as
// the arithmetic per byte keeps up. A 4-bit code must become a float before
// its product, and integer-to-float instructions run at a quarter of the FMA
// rate, so codes become floats by bit placement: a code c in the top mantissa
// bits of 1.0 is the float 1 + c / 16, exactly (an int8 code b, offset to
// b + 128, is 1 + (b + 128) / 256). Each chunk's sum of those floats times x
// is corrected for the offset with the sum of x over the chunk, which a warp
// computes once per load of x and shares between the columns it takes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Most rows of x one launch takes (more rows: the caller loops or dequantizes).
inline constexpr int64_t kQuantizedGemvMaxRows = 4;

enum class WeightCodes { Int8, Int4Groups };

struct QuantizedGemvParams {
  WeightCodes codes = WeightCodes::Int8;
  const void* x = nullptr;  ///< element (m, k) at x + m * x_rs + k (contiguous rows)
  int64_t x_rs = 0;
  DType dtype = DType::BFloat16;  ///< of x and out
  /// Int8: int8 [N, K]; Int4Groups: uint8 [N, K / 2], code of k = 2j in the
  /// low nibble of byte j. Rows contiguous, `w_rs` bytes apart.
  const void* w = nullptr;
  int64_t w_rs = 0;
  /// Int8: scale of (n, group g) at scale[n * s_n + g * s_g], one group a row
  /// when group_size is 0 (dtype `scale_dtype`). Int4Groups: scale and zero of
  /// (n, group g) at scale[n * s_n + g * s_g] and scale[... + s_pair].
  const void* scale = nullptr;
  DType scale_dtype = DType::BFloat16;
  int64_t s_n = 0, s_g = 0, s_pair = 0;
  /// Int4Groups: a multiple of 32 dividing K. Int8: 0 (a scale a row, which
  /// multiplies the finished sum as _weight_int8pack_mm does) or a multiple
  /// of 16 dividing K.
  int64_t group_size = 0;
  void* out = nullptr;     ///< contiguous [M, N]
  int64_t M = 0, N = 0, K = 0;
};

/// Why the kernel cannot take `p` (nullptr: it can): sizes, alignment, the
/// shared memory the staged rows of x need.
const char* quantized_gemv_unsupported(const QuantizedGemvParams& p);

/// out = x @ W^T, float32 sums rounded once to dtype. Fails (InvalidArgument)
/// where quantized_gemv_unsupported says why.
Error launch_quantized_gemv(const QuantizedGemvParams& p, cudaStream_t stream);

/// Weight rows [j0, j0 + rows) of an Int8 weight times their scales, rounded
/// to `dtype`, into `out`: row-major [rows, K]. Any group size (0: a row);
/// `w` may have any strides (w_rs bytes between rows, w_cs between codes).
Error launch_dequantize_int8_rows(const QuantizedGemvParams& p, int64_t w_cs, int64_t j0, int64_t rows, void* out,
                                  cudaStream_t stream);

/// Weight rows [j0, j0 + rows) of an Int4Groups weight, (code - 8) * scale +
/// zero computed in float32 and rounded to `dtype`, into `out`: row-major
/// [rows, K] (the operand of a library product when x has many rows). Any
/// group size dividing K; `w` may have any row stride.
Error launch_dequantize_int4_rows(const QuantizedGemvParams& p, int64_t j0, int64_t rows, void* out,
                                  cudaStream_t stream);

/// out = x @ W^T for an Int4Groups weight of any shape the op accepts (any
/// group size, x rows any stride): one thread per output element. The
/// correct path where the fast kernel's conditions do not hold.
Error launch_int4_linear_simple(const QuantizedGemvParams& p, cudaStream_t stream);

}  // namespace kiln::cudadev
