// _weight_int4pack_mm's product: bfloat16 activations times an int4 weight
// in the tile-packed layout ATen's CUDA _convert_weight_to_int4pack writes
// (the "tinygemm" layout torchao's int4 weight-only config and gpt-fast
// use), dequantized per group of k with a bfloat16 scale and zero point.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/error.h"

namespace kiln::cudadev {

/// The packed weight, int32 [n / 8][k / (inner_k_tiles * 16)][32][inner_k_tiles / 2]
/// of any strides (element (a, b, c, d) at ptr[a * s0 + b * s1 + c * s2 + d * s3]).
struct Int4PackedWeight {
  const int32_t* ptr = nullptr;
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int inner_k_tiles = 2;  ///< 2, 4 or 8
};

/// out (m x n, contiguous bfloat16) = x (m x k, bfloat16, any strides) @ W^T,
/// W[j][c] = bf16((q - 8) * scale + zero) for the int4 code q of (j, c) and
/// (scale, zero) = qsz[c / group_size][j][0..1] (bfloat16, strides q_s0..q_s2);
/// float32 sums rounded once to bfloat16. Callers check the sizes: k a
/// positive multiple of inner_k_tiles * 16 and of group_size (32, 64, 128 or
/// 256), n a multiple of 8. Each 8-column tile of the weight is read once
/// per group of up to four rows of x (once in all for a decode step's m <= 4).
Error launch_weight_int4pack_mm(const void* x, int64_t x_rs, int64_t x_cs, Int4PackedWeight w, const void* qsz,
                                int64_t q_s0, int64_t q_s1, int64_t q_s2, int64_t group_size, void* out, int64_t m,
                                int64_t n, int64_t k, cudaStream_t stream);

/// Columns [tile0 * 8, (tile0 + tiles) * 8) of W, dequantized as above, into
/// w_out: row-major bfloat16 [tiles * 8, k] (row j - tile0 * 8 holds column
/// j's k values), for a library product when x has many rows.
Error launch_dequantize_int4pack(Int4PackedWeight w, const void* qsz, int64_t q_s0, int64_t q_s1, int64_t q_s2,
                                 int64_t group_size, int64_t tile0, int64_t tiles, int64_t k, void* w_out,
                                 cudaStream_t stream);

}  // namespace kiln::cudadev
