// A memory-bound matrix-vector kernel for matrix products with a few rows:
//   out[b, m, n] = alpha * sum_k a[b, m, k] * w[b, n, k] + beta * out[b, m, n]
// for m < M <= kGemvMaxRows, where each w[b, n, :] is one contiguous row of a
// row-major weight. That is nn.Linear at batch 1 (decode): the product's
// right operand is the transposed weight, mm(x, permute(W)), and every weight
// byte is read exactly once, so the time is the weight bytes over HBM
// bandwidth. cuBLASLt's heuristics pick tiles shaped for large M there and
// read the weights at a fraction of that bandwidth.
//
// Each warp reads a weight row with 16-byte loads, several in flight per
// lane, and multiplies it with the M rows of `a` (tiny, served by L1/L2);
// warps reduce with shuffles. When the columns alone cannot fill the GPU
// (few, long rows) the warps of a block split each row's K range among
// themselves and add their partial sums through shared memory; no atomics,
// so results are deterministic.
//
// float32, float16 and bfloat16; float32 accumulation; float32 is plain FMA
// (never TF32). out may have any strides. With beta == 0 out is never read
// (NaNs there do not leak), as in matmul_into.
//
// Why M <= 4: every weight vector is multiplied with M vectors of `a`, which
// come from L1, so the L1 traffic is M times the HBM weight traffic. At M = 4
// that is ~13 TB/s on an H100 for 3.35 TB/s of weights, about half of L1's
// bandwidth, and the M x unroll vectors of `a` still fit in registers; at
// larger M L1 and register pressure, not HBM, would set the pace, and the
// products have enough rows for cuBLASLt's tensor-core kernels to do well.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Most rows of `a` (M) the kernel takes.
inline constexpr int64_t kGemvMaxRows = 4;

/// Strides are in elements. `batch` products share M, N, K; batch strides
/// are ignored when batch is 1, lda when M is 1 and ldw when N is 1.
struct GemvParams {
  const void* a = nullptr;  ///< element (b, m, k) at a + b*a_bs + m*lda + k*a_ks
  const void* w = nullptr;  ///< element (b, n, k) at w + b*w_bs + n*ldw + k*w_ks
  void* out = nullptr;      ///< element (b, m, n) at out + b*out_bs + m*out_rs + n*out_cs
  DType dtype = DType::Float32;  ///< of a, w and out
  int64_t batch = 1, M = 0, N = 0, K = 0;
  int64_t lda = 0, a_ks = 1, a_bs = 0;
  int64_t ldw = 0, w_ks = 1, w_bs = 0;
  int64_t out_rs = 0, out_cs = 1, out_bs = 0;
  float alpha = 1.0f, beta = 0.0f;
  /// Optional addend broadcast over the rows (addmm with nn.Linear's bias):
  /// when set, beta scales bias[n * bias_stride] (dtype) instead of out's own
  /// value, so the bias needs no copy into out first.
  const void* bias = nullptr;
  int64_t bias_stride = 0;
  /// Optional RMSNorm prologue (Kiln's op kiln::rms_norm_linear): when set,
  /// each row of a is first replaced by rms_norm(row) * (norm_weight +
  /// norm_offset), computed in float32 and rounded to dtype, as the unfused
  /// graph does. Each block normalises the rows into shared memory (the sums
  /// of squares of a few KB, recomputed per block, cost less than a launch).
  /// Needs batch == 1 and the rows in at most kGemvMaxNormBytes.
  const void* norm_weight = nullptr;  ///< [K], unit stride, dtype norm_dtype
  DType norm_dtype = DType::Float32;
  float norm_eps = 0.0f, norm_offset = 0.0f;
};

/// Most bytes of normalised rows (M * K elements) the RMSNorm prologue keeps
/// in shared memory: the default dynamic limit, no opt-in needed.
inline constexpr int64_t kGemvMaxNormBytes = 48 * 1024;

/// Null when the kernel takes `p`; otherwise why not (for logs and tests):
/// dtype float32/float16/bfloat16; 1 <= M <= kGemvMaxRows; K a positive
/// multiple of 16 bytes' worth of elements; unit K strides; a and w 16-byte
/// aligned, and so are lda, ldw and the batch strides of a and w (in bytes)
/// where they matter; batch <= 65535. Pure host arithmetic.
const char* gemv_unsupported(const GemvParams& p);
inline bool gemv_applies(const GemvParams& p) { return gemv_unsupported(p) == nullptr; }

/// Output columns one block of the kernel handles on a device with
/// `sm_count` multiprocessors (1, 2, 4 or 8; its 8 warps split each
/// column's K range 8 / that many ways). Pure host arithmetic.
int gemv_columns_per_block(const GemvParams& p, int sm_count);

/// Launches on `stream` (asynchronous). InvalidArgument naming the reason
/// when gemv_unsupported(p) is not null.
Error launch_gemv(const GemvParams& p, int sm_count, cudaStream_t stream);

}  // namespace kiln::cudadev
