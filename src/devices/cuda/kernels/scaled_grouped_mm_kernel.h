// The float8 grouped matrix product of _scaled_grouped_mm (float8 e4m3fn
// operands, row-wise float32 scales, bfloat16 result) in its four forms:
//
//   split Rows    (mat_a 2-D [S, K],    mat_b 3-D [G, K, N]): offs splits the
//                 rows of mat_a and of the result [S, N]; row i of group g is
//                 mat_a[i] @ mat_b[g], scaled by scale_a[i] * scale_b[g, j].
//   split Columns (mat_a 3-D [G, M, K], mat_b 2-D [K, N]): offs splits the
//                 columns of mat_b and of the result [M, N]; column j of group
//                 g is mat_a[g] @ mat_b[:, j], scaled by scale_a[g, i] * scale_b[j].
//   split K       (mat_a 2-D [M, K],    mat_b 2-D [K, N]): offs splits K;
//                 result[g] = mat_a[:, Kg] @ mat_b[Kg, :], scaled by
//                 scale_a[g*M + i] * scale_b[g*N + j] (zero for an empty group).
//   None          (mat_a 3-D [G, M, K], mat_b 3-D [G, K, N]): result[g] =
//                 mat_a[g] @ mat_b[g], scaled by scale_a[g, i] * scale_b[g, j].
//
// Rows (columns) past the last group are zero. offs (int32) is read on the
// device only, clamped as group_ends.cuh says: no synchronisation, and the
// launch may be recorded in a CUDA graph.
//
// float8 is widened to float32 exactly, products are summed in float32 (64 x
// 64 result tiles over K steps of 32, plain FMA), the sum is multiplied by
// scale_a then scale_b and rounded once to bfloat16.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/error.h"

namespace kiln::cudadev {

enum class GroupSplit { Rows, Columns, K, None };

/// Strides are in elements.
struct ScaledGroupedMmParams {
  GroupSplit split = GroupSplit::None;
  /// float8 e4m3fn element (g, i, k) at a + g*a_gs + i*a_rs + k*a_ks (a_gs 0 for a 2-D mat_a).
  const uint8_t* a = nullptr;
  int64_t a_gs = 0, a_rs = 0, a_ks = 1;
  /// float8 e4m3fn element (g, k, j) at b + g*b_gs + k*b_ks + j*b_ns (b_gs 0 for a 2-D mat_b).
  const uint8_t* b = nullptr;
  int64_t b_gs = 0, b_ks = 1, b_ns = 0;
  /// Row i of group g is scaled by scale_a[g*sa_gs + i], column j by scale_b[g*sb_gs + j].
  const float* scale_a = nullptr;
  int64_t sa_gs = 0;
  const float* scale_b = nullptr;
  int64_t sb_gs = 0;
  /// int32 group ends, element g at offs + g*offs_stride (unused for None).
  const int32_t* offs = nullptr;
  int64_t offs_stride = 1;
  /// bfloat16 element (batch, i, j) at out + batch*o_bs + i*o_rs + j; batches
  /// are the groups for K and None, one otherwise.
  void* out = nullptr;
  int64_t o_bs = 0, o_rs = 0;
  /// G groups; the result has M rows and N columns per batch; K is mat_a's
  /// last extent (the total over the groups for split K).
  int64_t G = 0, M = 0, N = 0, K = 0;
};

/// Null when the kernel takes `p`; otherwise why not (more than
/// kGroupedMmMaxGroups groups (grouped_mm_kernel.h), an extent of 2^31 or more, more than
/// 65535 * 64 rows). Pure host arithmetic.
const char* scaled_grouped_mm_unsupported(const ScaledGroupedMmParams& p);

/// Launches on `stream` (asynchronous, graph-capturable); nothing when the
/// result is empty. InvalidArgument naming the reason when
/// scaled_grouped_mm_unsupported(p) is not null.
Error launch_scaled_grouped_mm(const ScaledGroupedMmParams& p, cudaStream_t stream);

}  // namespace kiln::cudadev
