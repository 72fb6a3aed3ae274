#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdint>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/gemv_kernel.h"
#include "devices/cuda/kernels/element_convert.cuh"

namespace kiln::cudadev {
namespace {

constexpr int kWarps = 8;  // per block
constexpr int kThreads = kWarps * 32;
// 16-byte weight loads each lane keeps in flight: with 8 warps a block has
// 16 KiB outstanding, and several resident blocks per SM cover HBM latency.
constexpr int kUnroll = 4;
constexpr int64_t kVecBytes = 16;

// acc + the dot product of two 16-byte vectors holding elements of T, in
// float32. Elements pair up in memory order (the low half of a 32-bit word
// is the lower-addressed element on this little-endian GPU).
template <typename T>
__device__ inline float dot16(const uint4& w, const uint4& a, float acc);

template <>
__device__ inline float dot16<float>(const uint4& w, const uint4& a, float acc) {
  acc = fmaf(__uint_as_float(w.x), __uint_as_float(a.x), acc);
  acc = fmaf(__uint_as_float(w.y), __uint_as_float(a.y), acc);
  acc = fmaf(__uint_as_float(w.z), __uint_as_float(a.z), acc);
  acc = fmaf(__uint_as_float(w.w), __uint_as_float(a.w), acc);
  return acc;
}

__device__ inline float dot_word_bf16(uint32_t w, uint32_t a, float acc) {
  // A bfloat16 is the upper half of the float32 with the same value.
  acc = fmaf(__uint_as_float(w << 16), __uint_as_float(a << 16), acc);
  return fmaf(__uint_as_float(w & 0xffff0000u), __uint_as_float(a & 0xffff0000u), acc);
}

template <>
__device__ inline float dot16<__nv_bfloat16>(const uint4& w, const uint4& a, float acc) {
  acc = dot_word_bf16(w.x, a.x, acc);
  acc = dot_word_bf16(w.y, a.y, acc);
  acc = dot_word_bf16(w.z, a.z, acc);
  return dot_word_bf16(w.w, a.w, acc);
}

__device__ inline float dot_word_half(uint32_t w, uint32_t a, float acc) {
  const auto lo = [](uint32_t v) { return __half2float(__ushort_as_half(static_cast<unsigned short>(v & 0xffffu))); };
  const auto hi = [](uint32_t v) { return __half2float(__ushort_as_half(static_cast<unsigned short>(v >> 16))); };
  acc = fmaf(lo(w), lo(a), acc);
  return fmaf(hi(w), hi(a), acc);
}

template <>
__device__ inline float dot16<__half>(const uint4& w, const uint4& a, float acc) {
  acc = dot_word_half(w.x, a.x, acc);
  acc = dot_word_half(w.y, a.y, acc);
  acc = dot_word_half(w.z, a.z, acc);
  return dot_word_half(w.w, a.w, acc);
}

// out[b, m, n] = alpha * sum + beta * addend, rounded once; the addend is
// bias[n] when a bias is given, else out[b, m, n]. With beta == 0 it is not
// read at all.
template <typename T>
__device__ inline void store(const GemvParams& p, int64_t b, int64_t m, int64_t n, float sum) {
  T* o = static_cast<T*>(p.out) + b * p.out_bs + m * p.out_rs + n * p.out_cs;
  float v = p.alpha * sum;
  if (p.beta != 0.0f) {
    const float addend = p.bias != nullptr ? to_float(static_cast<const T*>(p.bias)[n * p.bias_stride]) : to_float(*o);
    v = fmaf(p.beta, addend, v);
  }
  *o = from_float<T>(v);
}

// The RMSNorm prologue: rows 0..M-1 of a (batch 0), normalised and rounded
// to T, into a_s [M][K]. All threads of the block take part. Each thread
// reads whole 16-byte vectors (a 2048-wide bfloat16 row is one per thread),
// so the two passes over the row cost two load latencies, not one per
// element; the second pass hits L1.
template <typename T, int M>
__device__ void normalise_rows(const GemvParams& p, T* a_s) {
  constexpr int kVec = static_cast<int>(kVecBytes / static_cast<int64_t>(sizeof(T)));
  __shared__ float partial[kWarps][M];
  __shared__ float inv_rms[M];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int64_t vecs = p.K / kVec;
  float ss[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const uint4* row = reinterpret_cast<const uint4*>(static_cast<const T*>(p.a) + m * p.lda);
    ss[m] = 0.0f;
#pragma unroll 4
    for (int64_t v = tid; v < vecs; v += kThreads) {
      const uint4 x = __ldg(row + v);
      ss[m] = dot16<T>(x, x, ss[m]);
    }
    for (int offset = 16; offset > 0; offset /= 2) ss[m] += __shfl_xor_sync(0xffffffffu, ss[m], offset);
    if (lane == 0) partial[warp][m] = ss[m];
  }
  __syncthreads();
  if (tid < M) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += partial[w][tid];
    inv_rms[tid] = rsqrtf(total / static_cast<float>(p.K) + p.norm_eps);
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const uint4* row = reinterpret_cast<const uint4*>(static_cast<const T*>(p.a) + m * p.lda);
    uint4* dst = reinterpret_cast<uint4*>(a_s + m * p.K);
#pragma unroll 4
    for (int64_t v = tid; v < vecs; v += kThreads) {
      const uint4 x = __ldg(row + v);
      T in[kVec], out[kVec];
      memcpy(in, &x, sizeof(x));
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        out[j] = from_float<T>(to_float(in[j]) * inv_rms[m] * (load_as_float(p.norm_weight, p.norm_dtype, v * kVec + j) + p.norm_offset));
      uint4 y;
      memcpy(&y, out, sizeof(y));
      dst[v] = y;
    }
  }
  __syncthreads();
}

// Grid: x = blocks of `cols_per_block` output columns, y = batch. Warp w of a
// block works on column w / warps_per_col and, within that column's weight
// row, on the vectors part*32 + lane + j*warps_per_col*32 (part = w %
// warps_per_col): consecutive lanes read consecutive 16-byte vectors, so each
// warp-wide load is one contiguous 512-byte stretch of the row.
template <typename T, int M, bool NORM>
__global__ void __launch_bounds__(kThreads) gemv_kernel(const GemvParams p, int cols_per_block) {
  constexpr int64_t kVec = kVecBytes / static_cast<int64_t>(sizeof(T));
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int warps_per_col = kWarps / cols_per_block;
  const int col = warp / warps_per_col, part = warp % warps_per_col;
  const int64_t b = blockIdx.y;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * cols_per_block + col;
  const uint4* w = reinterpret_cast<const uint4*>(static_cast<const T*>(p.w) + b * p.w_bs + n * p.ldw);
  const int64_t vecs = p.K / kVec;
  const int64_t step = static_cast<int64_t>(warps_per_col) * 32;
  int64_t i = static_cast<int64_t>(part) * 32 + lane;
  extern __shared__ __align__(16) unsigned char gemv_smem[];
  T* a_s = reinterpret_cast<T*>(gemv_smem);  // [M][K], NORM only
  // With the norm prologue, the first unrolled step's weights are requested
  // before it, so that their latency overlaps the normalisation.
  uint4 first[kUnroll];
  const bool preloaded = NORM && n < p.N && i + (kUnroll - 1) * step < vecs;
  if constexpr (NORM) {
    if (preloaded) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) first[u] = __ldcs(w + i + u * step);
    }
    normalise_rows<T, M>(p, a_s);
  }

  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.0f;

  // Warps past the last column skip the loads but still take part in the
  // shuffles and the __syncthreads below.
  if (n < p.N) {
    const T* a_base = static_cast<const T*>(p.a) + b * p.a_bs;
    const uint4* a[M];
#pragma unroll
    for (int m = 0; m < M; ++m)
      a[m] = reinterpret_cast<const uint4*>(NORM ? a_s + m * p.K : a_base + m * p.lda);
    // `a` from global memory goes through the read-only cache; the normalised
    // rows are in shared memory, which __ldg cannot read.
    const auto load_a = [&](const uint4* ptr) { return NORM ? *ptr : __ldg(ptr); };
    if (preloaded) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int m = 0; m < M; ++m) acc[m] = dot16<T>(first[u], load_a(a[m] + i + u * step), acc[m]);
      }
      i += kUnroll * step;
    }
    // Weights stream through once (__ldcs: evict-first, keep them from
    // pushing `a` out of the caches); `a` is re-read by every warp (__ldg).
    for (; i + (kUnroll - 1) * step < vecs; i += kUnroll * step) {
      uint4 wv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(w + i + u * step);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int m = 0; m < M; ++m) acc[m] = dot16<T>(wv[u], load_a(a[m] + i + u * step), acc[m]);
      }
    }
    for (; i < vecs; i += step) {
      const uint4 wv = __ldcs(w + i);
#pragma unroll
      for (int m = 0; m < M; ++m) acc[m] = dot16<T>(wv, load_a(a[m] + i), acc[m]);
    }
  }

  // Butterfly: afterwards every lane holds the warp's sums.
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], offset);
  }

  if (warps_per_col == 1) {  // uniform over the block: no barrier is skipped by some threads only
    if (n < p.N) {
#pragma unroll
      for (int m = 0; m < M; ++m)
        if (lane == m) store<T>(p, b, m, n, acc[m]);
    }
    return;
  }

  __shared__ float partial[kWarps][M];
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < M; ++m) partial[warp][m] = acc[m];
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < cols_per_block * M) {
    const int c = static_cast<int>(threadIdx.x) / M, m = static_cast<int>(threadIdx.x) % M;
    const int64_t nc = static_cast<int64_t>(blockIdx.x) * cols_per_block + c;
    if (nc < p.N) {
      float s = 0.0f;
      for (int q = 0; q < warps_per_col; ++q) s += partial[c * warps_per_col + q][m];
      store<T>(p, b, m, nc, s);
    }
  }
}

template <typename T, bool NORM>
void launch_rows(const GemvParams& p, int cols, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.N + cols - 1) / cols), static_cast<unsigned>(p.batch));
  const size_t smem = NORM ? static_cast<size_t>(p.M * p.K) * sizeof(T) : 0;
  switch (p.M) {
    case 1: gemv_kernel<T, 1, NORM><<<grid, kThreads, smem, stream>>>(p, cols); break;
    case 2: gemv_kernel<T, 2, NORM><<<grid, kThreads, smem, stream>>>(p, cols); break;
    case 3: gemv_kernel<T, 3, NORM><<<grid, kThreads, smem, stream>>>(p, cols); break;
    default: gemv_kernel<T, 4, NORM><<<grid, kThreads, smem, stream>>>(p, cols); break;
  }
}

template <typename T>
void launch_rows(const GemvParams& p, int cols, cudaStream_t stream) {
  if (p.norm_weight != nullptr)
    launch_rows<T, true>(p, cols, stream);
  else
    launch_rows<T, false>(p, cols, stream);
}

bool aligned16(int64_t elements, int64_t element_bytes) { return (elements * element_bytes) % kVecBytes == 0; }

}  // namespace

const char* gemv_unsupported(const GemvParams& p) {
  if (p.dtype != DType::Float32 && p.dtype != DType::Float16 && p.dtype != DType::BFloat16)
    return "dtype is not float32, float16 or bfloat16";
  if (p.batch < 1 || p.M < 1 || p.N < 1 || p.K < 1) return "empty product";
  if (p.M > kGemvMaxRows) return "more than 4 rows (M > 4)";
  if (p.batch > 65535) return "batch larger than 65535";
  if (p.N > static_cast<int64_t>(INT_MAX)) return "more than 2^31 - 1 columns";
  const auto elem = static_cast<int64_t>(element_size(p.dtype));
  if (p.K % (kVecBytes / elem) != 0) return "K is not a multiple of 16 bytes of elements";
  if (p.a_ks != 1 || p.w_ks != 1) return "a or the weight is not contiguous along K";
  if (reinterpret_cast<uintptr_t>(p.a) % kVecBytes != 0 || reinterpret_cast<uintptr_t>(p.w) % kVecBytes != 0)
    return "a or the weight is not 16-byte aligned";
  if (p.M > 1 && !aligned16(p.lda, elem)) return "the row stride of a is not a multiple of 16 bytes";
  if (p.N > 1 && !aligned16(p.ldw, elem)) return "the row stride of the weight is not a multiple of 16 bytes";
  if (p.batch > 1 && (!aligned16(p.a_bs, elem) || !aligned16(p.w_bs, elem)))
    return "a batch stride is not a multiple of 16 bytes";
  if (p.norm_weight != nullptr) {
    if (p.batch != 1) return "an RMSNorm prologue with batch > 1";
    if (p.M * p.K * elem > kGemvMaxNormBytes) return "the normalised rows exceed 48 KiB of shared memory";
    if (p.norm_dtype != DType::Float32 && p.norm_dtype != DType::Float16 && p.norm_dtype != DType::BFloat16)
      return "the norm weight is not float32, float16 or bfloat16";
  }
  return nullptr;
}

int gemv_columns_per_block(const GemvParams& p, int sm_count) {
  const auto elem = std::max<int64_t>(static_cast<int64_t>(element_size(p.dtype)), 1);
  const int64_t vecs = p.K / std::max<int64_t>(kVecBytes / elem, 1);
  const int64_t want_blocks = 4 * static_cast<int64_t>(std::max(sm_count, 1));
  int cols = kWarps;
  // One warp per column while there are enough blocks to give every SM four;
  // otherwise more warps share each row, as long as every warp still gets
  // two full unrolled steps per lane. Four, not two: with two, Gemma's
  // 2560 x 2048 and 2048 x 8192 projections ran 320 and 512 blocks on 132
  // SMs (2.4 and 3.9 each, so SMs with one block fewer idled in the tail);
  // graph-replayed on an H100 they take 5.9 and 13.4 us at four against 6.5
  // and 14.4 us at two, and the wide ones (4096+ blocks) are unchanged.
  while (cols > 1 && (p.N + cols - 1) / cols * std::max<int64_t>(p.batch, 1) < want_blocks &&
         vecs >= static_cast<int64_t>(kWarps / cols) * 2 * 32 * kUnroll)
    cols /= 2;
  return cols;
}

Error launch_gemv(const GemvParams& p, int sm_count, cudaStream_t stream) {
  if (const char* why = gemv_unsupported(p))
    return set_error(Error::InvalidArgument, std::string("GEMV kernel: ") + why);
  const int cols = gemv_columns_per_block(p, sm_count);
  switch (p.dtype) {
    case DType::Float32: launch_rows<float>(p, cols, stream); break;
    case DType::Float16: launch_rows<__half>(p, cols, stream); break;
    default: launch_rows<__nv_bfloat16>(p, cols, stream); break;
  }
  return cuda_status(cudaGetLastError(), "launching the GEMV kernel");
}

}  // namespace kiln::cudadev
