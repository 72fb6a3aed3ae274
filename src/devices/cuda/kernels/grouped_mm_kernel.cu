#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/element_convert.cuh"
#include "devices/cuda/kernels/group_ends.cuh"
#include "devices/cuda/kernels/grouped_mm_kernel.h"
#include "devices/cuda/kernels/mma_m16n8k16.cuh"

namespace kiln::cudadev {
namespace {

// The group ends: offs clamped to the rows (group_ends.cuh).
__device__ inline GroupOffsets row_groups(const GroupedMmParams& p) {
  GroupOffsets o;
  o.offs = p.offs;
  o.dtype = p.offs_dtype;
  o.stride = p.offs_stride;
  o.groups = p.G;
  o.limit = p.S;
  return o;
}

// ---- decode: one weight pass per group --------------------------------------------

constexpr int kGemvWarps = 8;
constexpr int kGemvThreads = kGemvWarps * 32;
constexpr int kGemvRows = 4;  // rows of a group multiplied per pass over its weight column
constexpr int64_t kVecBytes = 16;

template <typename T>
__device__ inline float dot_vec(const uint4& a, const uint4& b, float acc) {
  constexpr int kN = static_cast<int>(kVecBytes / sizeof(T));
  T x[kN], y[kN];
  memcpy(x, &a, sizeof(a));
  memcpy(y, &b, sizeof(b));
#pragma unroll
  for (int j = 0; j < kN; ++j) acc = fmaf(to_float(x[j]), to_float(y[j]), acc);
  return acc;
}

// Grid: x = chunks of kGemvWarps output columns (one per warp), y = row slots.
// The slot of a group's first row computes the group; the slots past the last
// group write their row's zeros. VEC: 16-byte loads along K (x and w
// contiguous and aligned there).
template <typename T, bool VEC>
__global__ void __launch_bounds__(kGemvThreads) grouped_gemv_kernel(const GroupedMmParams p) {
  extern __shared__ int gemv_ends[];
  load_group_ends<kGemvThreads>(row_groups(p), gemv_ends);
  const int groups = static_cast<int>(p.G);
  const int slot = static_cast<int>(blockIdx.y);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;
  if (n >= p.N) return;
  T* out = static_cast<T*>(p.out);
  const int last = groups > 0 ? gemv_ends[groups - 1] : 0;
  if (slot >= last) {
    if (lane == 0) out[static_cast<int64_t>(slot) * p.N + n] = from_float<T>(0.0f);
    return;
  }
  const int g = group_of(gemv_ends, groups, slot);
  const int start = g > 0 ? gemv_ends[g - 1] : 0, end = gemv_ends[g];
  if (start != slot) return;  // another slot computes this group
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w) + g * p.w_gs + n * p.w_ns;
  constexpr int64_t kVec = kVecBytes / static_cast<int64_t>(sizeof(T));
  for (int r0 = start; r0 < end; r0 += kGemvRows) {
    const int rows = min(kGemvRows, end - r0);
    float acc[kGemvRows] = {};
    if constexpr (VEC) {
      const uint4* wv = reinterpret_cast<const uint4*>(w);
      for (int64_t v = lane; v < p.K / kVec; v += 32) {
        const uint4 wk = __ldg(wv + v);
#pragma unroll
        for (int m = 0; m < kGemvRows; ++m)
          if (m < rows) acc[m] = dot_vec<T>(wk, __ldg(reinterpret_cast<const uint4*>(x + (r0 + m) * p.x_rs) + v), acc[m]);
      }
    } else {
      for (int64_t k = lane; k < p.K; k += 32) {
        const float wk = to_float(w[k * p.w_ks]);
#pragma unroll
        for (int m = 0; m < kGemvRows; ++m)
          if (m < rows) acc[m] = fmaf(wk, to_float(x[(r0 + m) * p.x_rs + k * p.x_ks]), acc[m]);
      }
    }
#pragma unroll
    for (int m = 0; m < kGemvRows; ++m) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
    }
    if (lane == 0) {
#pragma unroll
      for (int m = 0; m < kGemvRows; ++m)
        if (m < rows) out[static_cast<int64_t>(r0 + m) * p.N + n] = from_float<T>(acc[m]);
    }
  }
}

// ---- prefill: tiles ---------------------------------------------------------------

constexpr int kBM = 64, kBN = 64, kBK = 32;
constexpr int kTileThreads = 128;

// Shared-memory row length of the [64][kBK] tiles: padded so that the
// fragment loads (8 rows x 4 words per warp) and the FMA loads hit distinct banks.
template <typename T>
__host__ __device__ constexpr int tile_ld() {
  return sizeof(T) == 4 ? kBK + 1 : kBK + 8;
}

// As[m][k] = x[r0 + m, k0 + k] for rows in [ga, gb) (zero elsewhere); Bs[n][k] =
// w[g, k0 + k, n0 + n] (zero past K or N). Consecutive threads read
// consecutive addresses: along K for x and, when W_KCONTIG, for w; along N
// otherwise.
template <typename T, bool W_KCONTIG>
__device__ void load_tiles(const GroupedMmParams& p, T* As, T* Bs, int r0, int ga, int gb, int64_t g, int64_t k0,
                           int64_t n0) {
  constexpr int ld = tile_ld<T>();
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w) + g * p.w_gs;
  const T zero = from_float<T>(0.0f);
  const int tid = static_cast<int>(threadIdx.x);
  for (int e = tid; e < kBM * kBK; e += kTileThreads) {
    const int m = e / kBK, k = e % kBK;
    const int r = r0 + m;
    const int64_t kk = k0 + k;
    As[m * ld + k] = (r >= ga && r < gb && kk < p.K) ? x[r * p.x_rs + kk * p.x_ks] : zero;
  }
  for (int e = tid; e < kBN * kBK; e += kTileThreads) {
    const int n = W_KCONTIG ? e / kBK : e % kBN;
    const int k = W_KCONTIG ? e % kBK : e / kBN;
    const int64_t kk = k0 + k, nn = n0 + n;
    Bs[n * ld + k] = (kk < p.K && nn < p.N) ? w[kk * p.w_ks + nn * p.w_ns] : zero;
  }
}

// Grid: x = column tiles, y = row tiles. 4 warps; with MMA each warp computes
// a 32 x 32 quarter of the tile (2 x 4 m16n8 products per k16 step), without
// it each thread computes 8 rows x 4 columns with FMA.
template <typename T, bool MMA, bool W_KCONTIG>
__global__ void __launch_bounds__(kTileThreads) grouped_tile_kernel(const GroupedMmParams p) {
  constexpr int ld = tile_ld<T>();
  // Raw bytes: __shared__ arrays of a class type (__half) would need construction.
  __shared__ __align__(16) unsigned char a_tile[kBM * ld * sizeof(T)];
  __shared__ __align__(16) unsigned char b_tile[kBN * ld * sizeof(T)];
  T* As = reinterpret_cast<T*>(a_tile);
  T* Bs = reinterpret_cast<T*>(b_tile);
  extern __shared__ int tile_ends[];
  load_group_ends<kTileThreads>(row_groups(p), tile_ends);
  const int groups = static_cast<int>(p.G);
  const int r0 = static_cast<int>(blockIdx.y) * kBM;
  const int r1 = min(r0 + kBM, static_cast<int>(p.S));
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  T* out = static_cast<T*>(p.out);
  const int last = groups > 0 ? tile_ends[groups - 1] : 0;

  // Every bound below comes from shared memory: the loop is uniform over the
  // block, so its barriers are reached by all threads.
  for (int g = group_of(tile_ends, groups, r0); g < groups; ++g) {
    const int start = g > 0 ? tile_ends[g - 1] : 0;
    if (start >= r1) break;
    const int ga = max(start, r0), gb = min(tile_ends[g], r1);
    if (gb <= ga) continue;  // an empty group
    // MMA: acc[mi * 4 + ni] is the m16n8 fragment (mi, ni); FMA: acc[i][j] is
    // row ty + 8i, column tx + 16j.
    float acc[8][4];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    }
    for (int64_t k0 = 0; k0 < p.K; k0 += kBK) {
      load_tiles<T, W_KCONTIG>(p, As, Bs, r0, ga, gb, g, k0, n0);
      __syncthreads();
      if constexpr (MMA) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
        // mma.sync m16n8k16 needs sm_80, like Kiln's attention kernels: a
        // build for an older GPU compiles (CI builds sm_75) but traps here,
        // so 16-bit grouped products need an sm_80+ GPU.
        __trap();
#else
        const int gid = lane / 4, t = lane % 4;
        const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
        const uint16_t* as = reinterpret_cast<const uint16_t*>(As);
        const uint16_t* bs = reinterpret_cast<const uint16_t*>(Bs);
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 16) {
          uint32_t a[2][4];
#pragma unroll
          for (int mi = 0; mi < 2; ++mi) {
            const int row = wm + mi * 16 + gid;
            a[mi][0] = lds32(as + row * ld + kk + 2 * t);
            a[mi][1] = lds32(as + (row + 8) * ld + kk + 2 * t);
            a[mi][2] = lds32(as + row * ld + kk + 2 * t + 8);
            a[mi][3] = lds32(as + (row + 8) * ld + kk + 2 * t + 8);
          }
#pragma unroll
          for (int ni = 0; ni < 4; ++ni) {
            const int col = wn + ni * 8 + gid;
            const uint32_t b0 = lds32(bs + col * ld + kk + 2 * t);
            const uint32_t b1 = lds32(bs + col * ld + kk + 2 * t + 8);
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) mma16816(T{}, acc[mi * 4 + ni], a[mi], b0, b1);
          }
        }
#endif
      } else {
        const int tx = tid % 16, ty = tid / 16;
#pragma unroll 4
        for (int k = 0; k < kBK; ++k) {
          float b[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) b[j] = to_float(Bs[(tx + 16 * j) * ld + k]);
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const float a = to_float(As[(ty + 8 * i) * ld + k]);
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a, b[j], acc[i][j]);
          }
        }
      }
      __syncthreads();
    }
    // Only this group's rows: the others' belong to their own group's pass.
    const auto put = [&](int r, int64_t n, float v) {
      if (r >= ga && r < gb && n < p.N) out[static_cast<int64_t>(r) * p.N + n] = from_float<T>(v);
    };
    if constexpr (MMA) {
      const int gid = lane / 4, t = lane % 4;
      const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          const float* d = acc[mi * 4 + ni];
          const int row = r0 + wm + mi * 16 + gid;
          const int64_t col = n0 + wn + ni * 8 + 2 * t;
          put(row, col, d[0]);
          put(row, col + 1, d[1]);
          put(row + 8, col, d[2]);
          put(row + 8, col + 1, d[3]);
        }
      }
    } else {
      const int tx = tid % 16, ty = tid / 16;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) put(r0 + ty + 8 * i, n0 + tx + 16 * j, acc[i][j]);
      }
    }
  }
  // Rows past the last group are zero.
  for (int e = tid; e < kBM * kBN; e += kTileThreads) {
    const int r = r0 + e / kBN;
    const int64_t n = n0 + e % kBN;
    if (r >= max(last, r0) && r < r1 && n < p.N) out[static_cast<int64_t>(r) * p.N + n] = from_float<T>(0.0f);
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % kVecBytes == 0; }

template <typename T>
void launch_typed(const GroupedMmParams& p, cudaStream_t stream) {
  const size_t ends_bytes = static_cast<size_t>(p.G > 0 ? p.G : 1) * sizeof(int);
  if (grouped_mm_uses_gemv(p)) {
    const auto elem = static_cast<int64_t>(sizeof(T));
    const bool vec = p.x_ks == 1 && p.w_ks == 1 && (p.K * elem) % kVecBytes == 0 && aligned16(p.x) &&
                     aligned16(p.w) && (p.x_rs * elem) % kVecBytes == 0 && (p.w_ns * elem) % kVecBytes == 0 &&
                     (p.w_gs * elem) % kVecBytes == 0;
    const dim3 grid(static_cast<unsigned>((p.N + kGemvWarps - 1) / kGemvWarps), static_cast<unsigned>(p.S));
    if (vec)
      grouped_gemv_kernel<T, true><<<grid, kGemvThreads, ends_bytes, stream>>>(p);
    else
      grouped_gemv_kernel<T, false><<<grid, kGemvThreads, ends_bytes, stream>>>(p);
    return;
  }
  constexpr bool kMma = sizeof(T) == 2;
  const dim3 grid(static_cast<unsigned>((p.N + kBN - 1) / kBN), static_cast<unsigned>((p.S + kBM - 1) / kBM));
  if (p.w_ks == 1 || p.w_ns != 1)
    grouped_tile_kernel<T, kMma, true><<<grid, kTileThreads, ends_bytes, stream>>>(p);
  else
    grouped_tile_kernel<T, kMma, false><<<grid, kTileThreads, ends_bytes, stream>>>(p);
}

}  // namespace

const char* grouped_mm_unsupported(const GroupedMmParams& p) {
  if (p.dtype != DType::Float32 && p.dtype != DType::Float16 && p.dtype != DType::BFloat16)
    return "dtype is not float32, float16 or bfloat16";
  if (p.offs_dtype != DType::Int32 && p.offs_dtype != DType::Int64) return "offs is not int32 or int64";
  if (p.G < 0 || p.G > kGroupedMmMaxGroups) return "more than 4096 groups";
  if (p.S < 0 || p.K < 0 || p.N < 0 || p.S >= INT_MAX || p.K >= INT_MAX || p.N >= INT_MAX)
    return "a dimension of 2^31 or more";
  if ((p.S + kBM - 1) / kBM > 65535) return "more than 65535 * 64 rows";
  return nullptr;
}

bool grouped_mm_uses_gemv(const GroupedMmParams& p) { return p.S <= kGroupedGemvMaxRows && p.w_ks == 1; }

Error launch_grouped_mm(const GroupedMmParams& p, cudaStream_t stream) {
  if (const char* why = grouped_mm_unsupported(p))
    return set_error(Error::InvalidArgument, std::string("grouped mm kernel: ") + why);
  if (p.S == 0 || p.N == 0) return Error::Ok;
  switch (p.dtype) {
    case DType::Float32: launch_typed<float>(p, stream); break;
    case DType::Float16: launch_typed<__half>(p, stream); break;
    default: launch_typed<__nv_bfloat16>(p, stream); break;
  }
  return cuda_status(cudaGetLastError(), "launching the grouped mm kernel");
}

}  // namespace kiln::cudadev
