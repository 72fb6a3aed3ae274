// Group ends of the grouped matrix products (kiln::grouped_mm,
// _scaled_grouped_mm), read on the device: offs[g] is the cumulative end of
// group g along the dimension the groups split (rows, columns or K).
//
// offs stays on the device and the host never reads it, so the ops may be
// recorded in a CUDA graph and replayed with other routing. Every block reads
// offs itself, clamps each value to [0, limit] and takes the running maximum,
// so the group ends it works with are non-decreasing and within the split
// dimension; valid offs are unchanged by that, and invalid ones (unchecked, as
// checking would need a synchronisation) give some grouping but never an
// access outside the operands. A position's group is then a binary search.
#pragma once

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::cudadev {

struct GroupOffsets {
  const void* offs = nullptr;  ///< element g at offs + g*stride, int32 or int64
  DType dtype = DType::Int32;
  int64_t stride = 1;
  int64_t groups = 0;
  int64_t limit = 0;  ///< extent of the split dimension
};

__device__ inline int load_group_end(const GroupOffsets& o, int64_t g) {
  const int64_t v = o.dtype == DType::Int64 ? static_cast<const int64_t*>(o.offs)[g * o.stride]
                                            : static_cast<const int32_t*>(o.offs)[g * o.stride];
  return static_cast<int>(v < 0 ? 0 : (v > o.limit ? o.limit : v));
}

// ends[g] = max(clamp(offs[0..g], 0, limit)). A block-wide inclusive max-scan:
// each thread scans a contiguous chunk, the chunks' maxima are scanned across
// warps, and each chunk is raised to the maximum of the chunks before it. All
// threads of the block take part; ends (shared memory, o.groups ints) is
// complete afterwards.
template <int kThreads>
__device__ void load_group_ends(const GroupOffsets& o, int* ends) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 32 of them");
  __shared__ int warp_max[kThreads / 32];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int groups = static_cast<int>(o.groups);
  const int per = (groups + kThreads - 1) / kThreads;
  const int lo = min(tid * per, groups), hi = min(lo + per, groups);
  int running = 0;
  for (int g = lo; g < hi; ++g) {
    running = max(running, load_group_end(o, g));
    ends[g] = running;
  }
  int incl = running;  // inclusive max over this warp's threads up to this one
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl = max(incl, up);
  }
  int excl = __shfl_up_sync(0xffffffffu, incl, 1);
  if (lane == 0) excl = 0;
  if (lane == 31) warp_max[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int v = lane < kThreads / 32 ? warp_max[lane] : 0;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int up = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) v = max(v, up);
    }
    if (lane < kThreads / 32) warp_max[lane] = v;
  }
  __syncthreads();
  if (warp > 0) excl = max(excl, warp_max[warp - 1]);
  for (int g = lo; g < hi; ++g) ends[g] = max(ends[g], excl);
  __syncthreads();
}

/// The group holding position r: the first g with ends[g] > r (`groups` when r
/// is past the last group).
__device__ inline int group_of(const int* ends, int groups, int r) {
  int lo = 0, hi = groups;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (ends[mid] > r)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace kiln::cudadev
