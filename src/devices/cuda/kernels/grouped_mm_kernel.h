// The grouped matrix product of Mixture-of-Experts layers (Kiln's op
// kiln::grouped_mm): rows of x [S, K] are sorted by group, offs[g] is the end
// row of group g, and out[r] = x[r] @ w[g] for the rows r of group g; rows
// from offs[G-1] on are zero.
//
// offs stays on the device and the host never reads it: the op may be
// recorded in a CUDA graph and replayed with other routing. Every block reads
// offs itself, clamps each value to [0, S] and takes the running maximum, so
// the group ends it works with are non-decreasing and within the rows; valid
// offs are unchanged by that, and invalid ones (unchecked, as checking would
// need a synchronisation) give some grouping of the rows but never an access
// outside x, w or out. It then finds a row's group by binary search.
//
// Two kernels:
//   - few rows (decode: S <= kGroupedGemvMaxRows, the weight contiguous
//     along K): one block per (output column chunk, row slot); the slot that
//     holds a group's first row computes that group, each warp streaming one
//     weight column over K once for all of the group's rows, as the GEMV
//     kernel does. Blocks of slots inside a group exit at once.
//   - otherwise (prefill): 64 x 64 output tiles over K steps of 32; a tile
//     whose rows span several groups runs once per group, with the rows of
//     the others masked. bfloat16/float16 multiply with tensor cores
//     (mma.sync m16n8k16, float32 accumulation), float32 with plain FMA
//     (never TF32).
// Any strides for x and w; out is contiguous [S, N].
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Most rows S for which the GEMV-like decode kernel is used.
inline constexpr int64_t kGroupedGemvMaxRows = 16;
/// Most groups (experts): every block keeps the group ends in shared memory.
inline constexpr int64_t kGroupedMmMaxGroups = 4096;

/// Strides are in elements.
struct GroupedMmParams {
  const void* x = nullptr;  ///< element (r, k) at x + r*x_rs + k*x_ks
  const void* w = nullptr;  ///< element (g, k, n) at w + g*w_gs + k*w_ks + n*w_ns
  const void* offs = nullptr;  ///< element g at offs + g*offs_stride, int32 or int64
  void* out = nullptr;  ///< [S, N], contiguous
  DType dtype = DType::Float32;  ///< of x, w and out
  DType offs_dtype = DType::Int32;
  int64_t S = 0, K = 0, N = 0, G = 0;
  int64_t x_rs = 0, x_ks = 1;
  int64_t w_gs = 0, w_ks = 1, w_ns = 0;
  int64_t offs_stride = 1;
};

/// Null when the kernels take `p`; otherwise why not: dtype float32, float16
/// or bfloat16; offs int32 or int64; G <= kGroupedMmMaxGroups; S, N, K below
/// 2^31. Pure host arithmetic.
const char* grouped_mm_unsupported(const GroupedMmParams& p);

/// Whether `p` takes the decode kernel (for tests and logs).
bool grouped_mm_uses_gemv(const GroupedMmParams& p);

/// Launches on `stream` (asynchronous; no synchronisation, graph-capturable).
/// Nothing is launched when out is empty. InvalidArgument naming the reason
/// when grouped_mm_unsupported(p) is not null.
Error launch_grouped_mm(const GroupedMmParams& p, cudaStream_t stream);

}  // namespace kiln::cudadev
