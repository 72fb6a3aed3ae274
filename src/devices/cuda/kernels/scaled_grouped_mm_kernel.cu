#include <cuda_bf16.h>

#include <climits>
#include <cstdint>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/float8_decode.cuh"
#include "devices/cuda/kernels/group_ends.cuh"
#include "devices/cuda/kernels/grouped_mm_kernel.h"
#include "devices/cuda/kernels/scaled_grouped_mm_kernel.h"

namespace kiln::cudadev {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 32;
constexpr int kThreads = 256;  // 16 x 16, each thread 4 x 4 results
constexpr int kSub = 16;

__device__ inline GroupOffsets split_groups(const ScaledGroupedMmParams& p) {
  GroupOffsets o;
  o.offs = p.offs;
  o.dtype = DType::Int32;
  o.stride = p.offs_stride;
  o.groups = p.G;
  o.limit = p.split == GroupSplit::Rows ? p.M : (p.split == GroupSplit::Columns ? p.N : p.K);
  return o;
}

struct Tiles {
  float a[kBM][kBK + 1];  // a[m][k]
  float b[kBK][kBN + 1];  // b[k][n]
};

// One group's contribution to the tile at (r0, c0) of result batch `batch`:
// rows [ra, rb), columns [ca, cb) and K range [ka, kb) of group g, which the
// caller derives from shared memory, so every thread of the block calls this
// with the same bounds and reaches its barriers. Elements outside those
// ranges are neither read nor written.
__device__ void tile_pass(const ScaledGroupedMmParams& p, Tiles& t, int64_t batch, int64_t g, int r0, int c0,
                          int ra, int rb, int ca, int cb, int ka, int kb) {
  const int tid = static_cast<int>(threadIdx.x), tx = tid % kSub, ty = tid / kSub;
  const uint8_t* a = p.a + g * p.a_gs;
  const uint8_t* b = p.b + g * p.b_gs;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }
  for (int k0 = ka; k0 < kb; k0 += kBK) {
    // Consecutive threads take consecutive k: mat_a row-major and mat_b
    // column-major (the layout ATen requires) read consecutive bytes.
    for (int e = tid; e < kBM * kBK; e += kThreads) {
      const int m = e / kBK, k = e % kBK;
      const int r = r0 + m, kk = k0 + k;
      t.a[m][k] =
          (r >= ra && r < rb && kk < kb)
              ? e4m3fn_to_float(a[static_cast<int64_t>(r) * p.a_rs + static_cast<int64_t>(kk) * p.a_ks])
              : 0.0f;
    }
    for (int e = tid; e < kBN * kBK; e += kThreads) {
      const int n = e / kBK, k = e % kBK;
      const int c = c0 + n, kk = k0 + k;
      t.b[k][n] =
          (c >= ca && c < cb && kk < kb)
              ? e4m3fn_to_float(b[static_cast<int64_t>(kk) * p.b_ks + static_cast<int64_t>(c) * p.b_ns])
              : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < kBK; ++k) {
      float bv[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = t.b[k][tx + kSub * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float av = t.a[ty + kSub * i][k];
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av, bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out) + batch * p.o_bs;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = r0 + ty + kSub * i;
    if (r < ra || r >= rb) continue;
    const float sa = p.scale_a[g * p.sa_gs + r];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = c0 + tx + kSub * j;
      if (c < ca || c >= cb) continue;
      // ATen's epilogue order: the sum times scale_a, then times scale_b.
      const float v = (acc[i][j] * sa) * p.scale_b[g * p.sb_gs + c];
      out[static_cast<int64_t>(r) * p.o_rs + c] = __float2bfloat16_rn(v);
    }
  }
}

// Grid: x = column tiles, y = row tiles, z = result batches.
__global__ void __launch_bounds__(kThreads) scaled_grouped_mm_kernel(const ScaledGroupedMmParams p) {
  __shared__ Tiles tiles;
  extern __shared__ int ends[];
  const int r0 = static_cast<int>(blockIdx.y) * kBM, c0 = static_cast<int>(blockIdx.x) * kBN;
  const int r1 = min(r0 + kBM, static_cast<int>(p.M)), c1 = min(c0 + kBN, static_cast<int>(p.N));
  const int64_t batch = blockIdx.z;
  const int K = static_cast<int>(p.K);
  if (p.split == GroupSplit::None) {
    tile_pass(p, tiles, batch, batch, r0, c0, r0, r1, c0, c1, 0, K);
    return;
  }
  load_group_ends<kThreads>(split_groups(p), ends);
  const int groups = static_cast<int>(p.G);
  if (p.split == GroupSplit::K) {
    const int g = static_cast<int>(batch);
    const int start = g > 0 ? ends[g - 1] : 0;
    tile_pass(p, tiles, batch, g, r0, c0, r0, r1, c0, c1, start, ends[g]);
    return;
  }
  // Rows or Columns: the groups meeting this tile's rows (columns) each run
  // over their part of it; the part past the last group is zero.
  const bool rows = p.split == GroupSplit::Rows;
  const int t0 = rows ? r0 : c0, t1 = rows ? r1 : c1;
  for (int g = group_of(ends, groups, t0); g < groups; ++g) {
    const int start = g > 0 ? ends[g - 1] : 0;
    if (start >= t1) break;
    const int lo = max(start, t0), hi = min(ends[g], t1);
    if (hi <= lo) continue;  // an empty group
    if (rows)
      tile_pass(p, tiles, 0, g, r0, c0, lo, hi, c0, c1, 0, K);
    else
      tile_pass(p, tiles, 0, g, r0, c0, r0, r1, lo, hi, 0, K);
  }
  const int last = groups > 0 ? ends[groups - 1] : 0;
  __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out);
  for (int e = static_cast<int>(threadIdx.x); e < kBM * kBN; e += kThreads) {
    const int r = r0 + e / kBN, c = c0 + e % kBN;
    if (r >= r1 || c >= c1) continue;
    if ((rows ? r : c) >= last) out[static_cast<int64_t>(r) * p.o_rs + c] = __float2bfloat16_rn(0.0f);
  }
}

}  // namespace

const char* scaled_grouped_mm_unsupported(const ScaledGroupedMmParams& p) {
  if (p.G < 0 || p.G > kGroupedMmMaxGroups) return "more than 4096 groups";
  if (p.M < 0 || p.N < 0 || p.K < 0 || p.M >= INT_MAX || p.N >= INT_MAX || p.K >= INT_MAX)
    return "an extent of 2^31 or more";
  if ((p.M + kBM - 1) / kBM > 65535) return "more than 65535 * 64 rows";
  return nullptr;
}

Error launch_scaled_grouped_mm(const ScaledGroupedMmParams& p, cudaStream_t stream) {
  if (const char* why = scaled_grouped_mm_unsupported(p))
    return set_error(Error::InvalidArgument, std::string("scaled grouped mm kernel: ") + why);
  const bool batched = p.split == GroupSplit::K || p.split == GroupSplit::None;
  const int64_t batches = batched ? p.G : 1;
  if (p.M == 0 || p.N == 0 || batches == 0) return Error::Ok;
  const size_t ends_bytes =
      p.split == GroupSplit::None ? 0 : static_cast<size_t>(p.G > 0 ? p.G : 1) * sizeof(int);
  const dim3 grid(static_cast<unsigned>((p.N + kBN - 1) / kBN), static_cast<unsigned>((p.M + kBM - 1) / kBM),
                  static_cast<unsigned>(batches));
  scaled_grouped_mm_kernel<<<grid, kThreads, ends_bytes, stream>>>(p);
  return cuda_status(cudaGetLastError(), "launching the scaled grouped mm kernel");
}

}  // namespace kiln::cudadev
