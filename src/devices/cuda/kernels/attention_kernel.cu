#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <math_constants.h>

#include <cstdint>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/attention_kernel.h"
#include "devices/cuda/kernels/attention_mma_kernel.h"
#include "devices/cuda/kernels/attention_span.cuh"
#include "devices/cuda/kernels/element_convert.cuh"
#include "devices/cuda/kernels/mma_m16n8k16.cuh"

namespace kiln::cudadev {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 4;
constexpr int kBlockM = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kBlockN = 32;                     // keys per tile: one per lane
constexpr int kThreads = kWarps * 32;

__device__ inline float load_f(const float* p, int64_t i) { return p[i]; }
__device__ inline float load_f(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ inline float load_f(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ inline void store_f(float* p, int64_t i, float v) { p[i] = v; }
__device__ inline void store_f(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ inline void store_f(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// An additive bias element, or a boolean keep-mask as 0 / -inf.
__device__ inline float load_bias(const void* p, DType t, int64_t i) {
  if (t == DType::Bool) return static_cast<const bool*>(p)[i] ? 0.0f : -CUDART_INF_F;
  return load_as_float(p, t, i);
}

__device__ inline float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block: kBlockM query rows of one (batch, head). Each warp owns
// kRowsPerWarp rows; per key tile, lane j scores key j against each row, the
// warp updates the row's running max/sum, and lanes accumulate output columns
// lane, lane+32, ... (kEvPerLane of them).
template <typename T, int kEvPerLane>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttentionParams p, int64_t m_tiles) {
  extern __shared__ float smem[];
  const int64_t E = p.E, Ev = p.Ev;
  const int64_t tile = blockIdx.x % m_tiles;
  const int64_t bh = blockIdx.x / m_tiles;
  const int64_t b = bh / p.Hq, h = bh % p.Hq;
  const int64_t hk = h / (p.Hq / p.Hk);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t m0 = tile * kBlockM;
  const BatchSpan span = batch_span(p, b);
  const int64_t rows = span.rows;

  float* q_s = smem;                          // [kBlockM][E]
  float* k_s = q_s + kBlockM * E;             // [kBlockN][E + 1] (padded: fewer bank conflicts)
  float* v_s = k_s + kBlockN * (E + 1);       // [kBlockN][Ev]
  float* p_s = v_s + kBlockN * Ev;            // [kWarps][32]

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const int64_t q_base = b * p.q_strides[0] + h * p.q_strides[1] + span.q_off * p.q_strides[2];
  const int64_t k_base = b * p.k_strides[0] + hk * p.k_strides[1] + span.k_off * p.k_strides[2];
  const int64_t v_base = b * p.v_strides[0] + hk * p.v_strides[1] + span.k_off * p.v_strides[2];

  for (int64_t idx = threadIdx.x; idx < kBlockM * E; idx += kThreads) {
    const int64_t r = idx / E, e = idx % E, i = m0 + r;
    q_s[idx] = i < rows ? load_f(q, q_base + i * p.q_strides[2] + e * p.q_strides[3]) : 0.0f;
  }

  float m_i[kRowsPerWarp], l_i[kRowsPerWarp], acc[kRowsPerWarp][kEvPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m_i[r] = -CUDART_INF_F;
    l_i[r] = 0.0f;
#pragma unroll
    for (int t = 0; t < kEvPerLane; ++t) acc[r][t] = 0.0f;
  }

  // Only keys some row of the block can see: the window's (or causal
  // diagonal's) bounds at the block's first and last row. A block past the
  // batch's rows walks none.
  int64_t n_begin = 0, n_end = 0;
  if (m0 < rows) {
    const int64_t last = (m0 + kBlockM < rows ? m0 + kBlockM : rows) - 1;
    n_begin = span.lo(m0) > 0 ? span.lo(m0) : 0;
    n_end = span.hi(last) + 1 < span.keys ? span.hi(last) + 1 : span.keys;
  }

  for (int64_t n0 = n_begin; n0 < n_end; n0 += kBlockN) {
    __syncthreads();  // the previous tile is consumed (and q_s is written on the first pass)
    for (int64_t idx = threadIdx.x; idx < kBlockN * E; idx += kThreads) {
      const int64_t j = idx / E, e = idx % E, key = n0 + j;
      k_s[j * (E + 1) + e] = key < n_end ? load_f(k, k_base + key * p.k_strides[2] + e * p.k_strides[3]) : 0.0f;
    }
    for (int64_t idx = threadIdx.x; idx < kBlockN * Ev; idx += kThreads) {
      const int64_t j = idx / Ev, e = idx % Ev, key = n0 + j;
      v_s[idx] = key < n_end ? load_f(v, v_base + key * p.v_strides[2] + e * p.v_strides[3]) : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r;
      const int64_t i = m0 + row;
      if (i >= rows) continue;  // uniform across the warp
      const int64_t key = n0 + lane;
      float s = -CUDART_INF_F;
      if (key < n_end && span.sees(i, key)) {
        const float* qr = q_s + row * E;
        const float* kr = k_s + lane * (E + 1);
        float dot = 0.0f;
        for (int64_t e = 0; e < E; ++e) dot = fmaf(qr[e], kr[e], dot);
        s = dot * p.scale;
        if (p.bias != nullptr)
          s += load_bias(p.bias, p.bias_dtype,
                         b * p.bias_strides[0] + h * p.bias_strides[1] + i * p.bias_strides[2] +
                             key * p.bias_strides[3]);
      }
      const float m_new = fmaxf(m_i[r], warp_max(s));
      if (m_new == -CUDART_INF_F) continue;  // every key so far masked; uniform across the warp
      const float alpha = expf(m_i[r] - m_new);  // 0 when m_i was -inf
      const float pj = expf(s - m_new);          // 0 for masked keys
      l_i[r] = l_i[r] * alpha + warp_sum(pj);
      m_i[r] = m_new;
      p_s[warp * 32 + lane] = pj;
      __syncwarp();
#pragma unroll
      for (int t = 0; t < kEvPerLane; ++t) {
        const int64_t e = lane + 32 * t;
        float a = acc[r][t] * alpha;
        if (e < Ev) {
          for (int j = 0; j < kBlockN; ++j) a = fmaf(p_s[warp * 32 + j], v_s[j * Ev + e], a);
        }
        acc[r][t] = a;
      }
      __syncwarp();  // p_s is rewritten by the next row
    }
  }

  T* out = static_cast<T*>(p.out);
  const int64_t o_base = b * p.out_strides[0] + h * p.out_strides[1] + span.q_off * p.out_strides[2];
  const int64_t lse_base = b * p.lse_strides[0] + h * p.lse_strides[1] + (p.lse_packed ? span.q_off : 0) * p.lse_strides[2];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = m0 + warp * kRowsPerWarp + r;
    if (i >= rows) {
      // Padding rows of the memory-efficient kernel's logsumexp.
      if (p.lse != nullptr && lane == 0 && i < p.lse_rows) p.lse[lse_base + i * p.lse_strides[2]] = CUDART_INF_F;
      continue;
    }
    const float inv = l_i[r] > 0.0f ? 1.0f / l_i[r] : 0.0f;
#pragma unroll
    for (int t = 0; t < kEvPerLane; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < Ev) store_f(out, o_base + i * p.out_strides[2] + e * p.out_strides[3], acc[r][t] * inv);
    }
    if (p.lse != nullptr && lane == 0)
      p.lse[lse_base + i * p.lse_strides[2]] = l_i[r] > 0.0f ? m_i[r] + logf(l_i[r]) : p.lse_masked;
  }
}

template <typename T, int kEvPerLane>
Error launch_typed(const AttentionParams& p, cudaStream_t stream) {
  // Enough row tiles for the query rows and for any logsumexp padding rows.
  const int64_t rows = p.lse != nullptr && p.lse_rows > p.L ? p.lse_rows : p.L;
  const int64_t m_tiles = (rows + kBlockM - 1) / kBlockM;
  const int64_t blocks = m_tiles * p.B * p.Hq;
  if (blocks > 0x7fffffff) return set_error(Error::NotSupported, "attention problem too large for one launch");
  const size_t smem = sizeof(float) * static_cast<size_t>(kBlockM * p.E + kBlockN * (p.E + 1) + kBlockN * p.Ev +
                                                          kWarps * 32);
  auto kernel = attention_kernel<T, kEvPerLane>;
  if (smem > 48 * 1024)
    KILN_RETURN_IF_ERROR(cuda_status(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize) for the attention kernel"));
  kernel<<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p, m_tiles);
  return cuda_status(cudaGetLastError(), "launching the attention kernel");
}

// ---------------------------------------------------------------------------
// Split-KV path for short queries (decode).
//
// A block owns kSplitRows "rows" of one (batch, key/value head): the query
// rows of every query head sharing that key/value head (GQA), flattened as
// g = head_in_group * L + query_index, so each key and value is read once
// for the whole group. Its key range is one chunk; the 4 warps take turns
// over that chunk a few keys at a time, each with its own running
// max/sum/accumulator, so no warp idles for a 1-row query. Within a warp the
// lanes split the head dimension (coalesced loads when it is contiguous) and
// a butterfly reduction gives every lane the same score. At the end the
// warps merge through shared memory and the block either writes the final
// output (one chunk) or its partial (max, sum, accumulator) to the workspace.

constexpr int kSplitRows = 4;           // flattened (GQA head, query) rows per block
constexpr int64_t kSplitMaxQueryLen = 16;  // longer queries keep the tiled kernel
constexpr int64_t kChunkAlign = 32;     // chunk sizes are multiples of this
constexpr int64_t kMaxSplits = 128;     // bounds the workspace and the merge

struct SplitArgs {
  int64_t row_tiles = 0;  // blocks along the flattened rows of one (batch, kv head)
  int64_t splits = 0;     // key chunks
  int64_t chunk = 0;      // keys per chunk
  float* ws_acc = nullptr;  // [B*Hq*L][splits][Ev] un-normalised partial outputs
  float* ws_m = nullptr;    // [B*Hq*L][splits] partial row max (-inf: nothing seen)
  float* ws_l = nullptr;    // [B*Hq*L][splits] partial row sum relative to ws_m
};

template <typename T, int kPer>
__global__ void __launch_bounds__(kThreads) attention_split_kernel(AttentionParams p, SplitArgs a) {
  // Keys one warp scores per step: 4 for ILP, 2 for the widest heads, where
  // 4 would exceed the register file (q, accumulator and keys all in registers).
  constexpr int kSplitKeys = kPer >= 8 ? 2 : 4;
  __shared__ float m_s[kWarps][kSplitRows];
  __shared__ float l_s[kWarps][kSplitRows];
  __shared__ float acc_s[kWarps][kSplitRows][kMaxAttentionHeadDim];

  const int64_t E = p.E, Ev = p.Ev;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int64_t blk = blockIdx.x;
  const int64_t c = blk % a.splits;
  blk /= a.splits;
  const int64_t tile = blk % a.row_tiles;
  blk /= a.row_tiles;
  const int64_t hk = blk % p.Hk;
  const int64_t b = blk / p.Hk;
  const int64_t group = p.Hq / p.Hk;
  const int64_t rows = group * p.L;

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);

  // This block's rows; q lives in registers, lane holding dims lane + 32 t.
  bool row_ok[kSplitRows];
  float q_r[kSplitRows][kPer];
  int64_t max_i = -1;
#pragma unroll
  for (int r = 0; r < kSplitRows; ++r) {
    const int64_t g = tile * kSplitRows + r;
    row_ok[r] = g < rows;
    const int64_t h = hk * group + (row_ok[r] ? g / p.L : 0), i = row_ok[r] ? g % p.L : 0;
    if (row_ok[r] && i > max_i) max_i = i;
    const int64_t q_base = b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2];
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const int64_t e = lane + 32 * t;
      q_r[r][t] = (row_ok[r] && e < E) ? load_f(q, q_base + e * p.q_strides[3]) : 0.0f;
    }
  }

  // The row whose masking/bias this lane looks up (see the key loop).
  static_assert(kSplitRows * kSplitKeys <= 32, "one lane per (row, key) pair of a step");
  bool lane_ok = false;
  int64_t lane_i = 0, lane_bias = 0;
  if (lane < kSplitRows * kSplitKeys) {
    const int64_t g = tile * kSplitRows + lane / kSplitKeys;
    lane_ok = g < rows;
    if (lane_ok) {
      lane_i = g % p.L;
      lane_bias = b * p.bias_strides[0] + (hk * group + g / p.L) * p.bias_strides[1] + lane_i * p.bias_strides[2];
    }
  }

  // The chunk's keys; causal rows never see a key past the block's last row.
  const int64_t k0 = c * a.chunk;
  int64_t k1 = k0 + a.chunk < p.S ? k0 + a.chunk : p.S;
  if (p.causal && max_i + 1 < k1) k1 = max_i + 1;

  float m_i[kSplitRows], l_i[kSplitRows], acc[kSplitRows][kPer];
#pragma unroll
  for (int r = 0; r < kSplitRows; ++r) {
    m_i[r] = -CUDART_INF_F;
    l_i[r] = 0.0f;
#pragma unroll
    for (int t = 0; t < kPer; ++t) acc[r][t] = 0.0f;
  }

  // Per-lane base pointers and the stride between a lane's dims (lane + 32 t):
  // keeps the unrolled loads' address arithmetic (and so registers) small.
  const T* k_lane = k + b * p.k_strides[0] + hk * p.k_strides[1] + lane * p.k_strides[3];
  const T* v_lane = v + b * p.v_strides[0] + hk * p.v_strides[1] + lane * p.v_strides[3];
  const int64_t k_step = 32 * p.k_strides[3], v_step = 32 * p.v_strides[3];
  for (int64_t n0 = k0 + warp * kSplitKeys; n0 < k1; n0 += kWarps * kSplitKeys) {
    float kv[kSplitKeys][kPer];  // keys, then values, of this step
#pragma unroll
    for (int j = 0; j < kSplitKeys; ++j) {
      const int64_t key = n0 + j;
      const T* kr = k_lane + key * p.k_strides[2];
#pragma unroll
      for (int t = 0; t < kPer; ++t)
        kv[j][t] = (key < k1 && lane + 32 * t < E) ? load_f(kr, t * k_step) : 0.0f;
    }
    // Lane x < kSplitRows * kSplitKeys fetches the additive term of pair
    // (row x / kSplitKeys, key n0 + x % kSplitKeys): its bias, or -inf when
    // masked (causal, past the chunk, padding row). One load per lane, then
    // broadcast by shuffles, instead of 16 unrolled dtype-switching loads.
    float add = -CUDART_INF_F;
    {
      const int64_t key = n0 + lane % kSplitKeys;
      if (lane_ok && key < k1 && !(p.causal && key > lane_i))
        add = p.bias != nullptr ? load_bias(p.bias, p.bias_dtype, lane_bias + key * p.bias_strides[3]) : 0.0f;
    }
    float s[kSplitRows][kSplitKeys];
#pragma unroll
    for (int r = 0; r < kSplitRows; ++r) {
#pragma unroll
      for (int j = 0; j < kSplitKeys; ++j) {
        const float term = __shfl_sync(0xffffffffu, add, r * kSplitKeys + j);
        float sc = -CUDART_INF_F;
        if (row_ok[r]) {  // uniform across the block: padding rows skip the reduction
          float dot = 0.0f;
#pragma unroll
          for (int t = 0; t < kPer; ++t) dot = fmaf(q_r[r][t], kv[j][t], dot);
          // Butterfly: every lane ends with the bit-identical sum, so the
          // masking and softmax decisions below are uniform across the warp.
          dot = warp_sum(dot);
          if (term != -CUDART_INF_F) sc = dot * p.scale + term;
        }
        s[r][j] = sc;
      }
    }
#pragma unroll
    for (int j = 0; j < kSplitKeys; ++j) {
      const int64_t key = n0 + j;
      const T* vr = v_lane + key * p.v_strides[2];
#pragma unroll
      for (int t = 0; t < kPer; ++t)
        kv[j][t] = (key < k1 && lane + 32 * t < Ev) ? load_f(vr, t * v_step) : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < kSplitRows; ++r) {
      float mx = m_i[r];
#pragma unroll
      for (int j = 0; j < kSplitKeys; ++j) mx = fmaxf(mx, s[r][j]);
      if (mx == -CUDART_INF_F) continue;  // nothing unmasked yet: keep the empty state (no inf - inf)
      const float alpha = expf(m_i[r] - mx);  // 0 when m_i was -inf
      float pj[kSplitKeys];
      float psum = 0.0f;
#pragma unroll
      for (int j = 0; j < kSplitKeys; ++j) {
        pj[j] = expf(s[r][j] - mx);  // 0 for masked keys
        psum += pj[j];
      }
      l_i[r] = l_i[r] * alpha + psum;
      m_i[r] = mx;
#pragma unroll
      for (int t = 0; t < kPer; ++t) {
        float o = acc[r][t] * alpha;
#pragma unroll
        for (int j = 0; j < kSplitKeys; ++j) o = fmaf(pj[j], kv[j][t], o);
        acc[r][t] = o;
      }
    }
  }

  // Merge the warps' partial states.
#pragma unroll
  for (int r = 0; r < kSplitRows; ++r) {
    if (lane == 0) {
      m_s[warp][r] = m_i[r];
      l_s[warp][r] = l_i[r];
    }
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < Ev) acc_s[warp][r][e] = acc[r][t];
    }
  }
  __syncthreads();

  T* out = static_cast<T*>(p.out);
  for (int64_t x = threadIdx.x; x < kSplitRows * Ev; x += kThreads) {
    const int r = static_cast<int>(x / Ev);
    const int64_t e = x % Ev;
    const int64_t g = tile * kSplitRows + r;
    if (g >= rows) continue;
    const int64_t h = hk * group + g / p.L, i = g % p.L;
    float mx = -CUDART_INF_F;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, m_s[w][r]);
    float l = 0.0f, o = 0.0f;
    if (mx != -CUDART_INF_F) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float wt = expf(m_s[w][r] - mx);  // 0 for a warp that saw only masked keys
        l = fmaf(wt, l_s[w][r], l);
        o = fmaf(wt, acc_s[w][r][e], o);
      }
    }
    if (a.splits == 1) {
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      store_f(out, b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2] + e * p.out_strides[3],
              o * inv);
      if (e == 0 && p.lse != nullptr)
        p.lse[b * p.lse_strides[0] + h * p.lse_strides[1] + i * p.lse_strides[2]] =
            l > 0.0f ? mx + logf(l) : -CUDART_INF_F;
    } else {
      const int64_t slot = ((b * p.Hq + h) * p.L + i) * a.splits + c;
      a.ws_acc[slot * Ev + e] = o;
      if (e == 0) {
        a.ws_m[slot] = mx;
        a.ws_l[slot] = l;
      }
    }
  }
}

// One block per query row: merges the row's chunk partials by rescaling each
// to the global max (log-sum-exp), normalises, and writes out (and lse).
//
// A decode step has few rows (8 for a GQA group at batch 1), so a handful of
// blocks read a few hundred KB: latency bounds this kernel, not bandwidth.
// Every load is therefore issued in parallel, never one dependent L2 round
// trip after another: thread c holds chunk c's max and sum (kCombineThreads
// >= kMaxSplits), and the accumulators are read as float4 columns by
// `groups` thread groups that each take every groups-th chunk, kCombineBatch
// chunks in flight at a time, then sum through shared memory.
constexpr int kCombineThreads = 256;
constexpr int kCombineBatch = 4;
static_assert(kCombineThreads >= kMaxSplits, "one chunk per thread for the maxima and sums");

template <int kThreadsInBlock>
__device__ inline float block_reduce(float v, bool is_max, float* scratch) {
  v = is_max ? warp_max(v) : warp_sum(v);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  __syncthreads();  // scratch is free (an earlier reduction has been read)
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
#pragma unroll
  for (int w = 1; w < kThreadsInBlock / 32; ++w) v = is_max ? fmaxf(v, scratch[w]) : v + scratch[w];
  return v;
}

template <typename T>
__global__ void __launch_bounds__(kCombineThreads) attention_combine_kernel(AttentionParams p, SplitArgs a) {
  __shared__ float w_s[kMaxSplits];
  __shared__ float red_s[kCombineThreads / 32];
  __shared__ float4 part_s[kCombineThreads];
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t row = blockIdx.x;  // (b * Hq + h) * L + i
  const int64_t i = row % p.L;
  const int64_t h = (row / p.L) % p.Hq;
  const int64_t b = row / (p.L * p.Hq);
  const int splits = static_cast<int>(a.splits);
  const float* acc = a.ws_acc + row * a.splits * p.Ev;

  const bool mine = tid < splits;
  const float m_c = mine ? a.ws_m[row * a.splits + tid] : -CUDART_INF_F;
  const float l_c = mine ? a.ws_l[row * a.splits + tid] : 0.0f;
  const float mx = block_reduce<kCombineThreads>(m_c, true, red_s);
  // A fully masked chunk (m = -inf) weighs 0.
  const float w_c = mine && mx != -CUDART_INF_F ? expf(m_c - mx) : 0.0f;
  if (mine) w_s[tid] = w_c;
  const float sum = block_reduce<kCombineThreads>(w_c * l_c, false, red_s);  // its barriers publish w_s
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

  T* out = static_cast<T*>(p.out);
  const int64_t o_base = b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2];
  const int Ev = static_cast<int>(p.Ev);
  if (Ev % 4 == 0 && Ev / 4 <= kCombineThreads) {
    const int cols = Ev / 4, groups = kCombineThreads / cols;
    const int col = tid % cols, g = tid / cols;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (g < groups) {
      for (int c0 = g; c0 < splits; c0 += kCombineBatch * groups) {
        float4 v[kCombineBatch];
#pragma unroll
        for (int u = 0; u < kCombineBatch; ++u) {
          const int c = c0 + u * groups;
          v[u] = c < splits ? reinterpret_cast<const float4*>(acc + static_cast<int64_t>(c) * Ev)[col]
                            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < kCombineBatch; ++u) {
          const int c = c0 + u * groups;
          const float w = c < splits ? w_s[c] : 0.0f;
          o.x = fmaf(w, v[u].x, o.x);
          o.y = fmaf(w, v[u].y, o.y);
          o.z = fmaf(w, v[u].z, o.z);
          o.w = fmaf(w, v[u].w, o.w);
        }
      }
    }
    part_s[tid] = o;
    __syncthreads();
    if (tid < cols) {
      for (int gg = 1; gg < groups; ++gg) {
        const float4 q = part_s[gg * cols + tid];
        o.x += q.x;
        o.y += q.y;
        o.z += q.z;
        o.w += q.w;
      }
      const int64_t e = 4 * static_cast<int64_t>(tid);
      store_f(out, o_base + (e + 0) * p.out_strides[3], o.x * inv);
      store_f(out, o_base + (e + 1) * p.out_strides[3], o.y * inv);
      store_f(out, o_base + (e + 2) * p.out_strides[3], o.z * inv);
      store_f(out, o_base + (e + 3) * p.out_strides[3], o.w * inv);
    }
  } else {
    for (int e = tid; e < Ev; e += kCombineThreads) {
      float o = 0.0f;
#pragma unroll 8
      for (int c = 0; c < splits; ++c) o = fmaf(w_s[c], acc[static_cast<int64_t>(c) * Ev + e], o);
      store_f(out, o_base + e * p.out_strides[3], o * inv);
    }
  }
  if (tid == 0 && p.lse != nullptr)
    p.lse[b * p.lse_strides[0] + h * p.lse_strides[1] + i * p.lse_strides[2]] =
        sum > 0.0f ? mx + logf(sum) : -CUDART_INF_F;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---------------------------------------------------------------------------
// Decode path for short float16/bfloat16 queries (see decode_unsupported).
//
// A block owns every flattened row g = head_in_group * L + query_index of one
// (batch, key/value head) -- at most kDecodeRows of them -- and one chunk of
// keys, which it walks kDecodeTile keys at a time: the tile's keys and values
// are copied into shared memory with coalesced 16-byte loads (read once for
// the whole GQA group), the scores of every (row, key) pair come from shared
// memory, and an online softmax folds the tile into per-row running
// (max, sum, accumulator). The chunk's partial goes to the split-KV workspace
// and attention_combine_kernel merges the chunks (also for a single chunk).
//
// Thread roles (kDecodeThreads = 256, 8 warps):
//  - scores: thread t scores key t % 64 of the tile against rows t / 64,
//    t / 64 + 4, ... (the whole warp shares its rows, so q reads broadcast);
//  - softmax and P @ V: warp w owns rows w and w + 8; lane owns output
//    columns 8 * lane .. 8 * lane + 7. The running max/sum of a row live in
//    registers of its warp (identical in every lane, as they come from
//    butterfly reductions).
// A block is the only one on its multiprocessor (a decode grid has a few
// dozen), so its time is the serial work of one thread: ncu showed 128
// threads issuing one instruction per 6.8 cycles at 6% occupancy. 256
// threads halve each thread's scores and P @ V rows.

constexpr int kDecodeRows = 16;     // flattened (GQA head, query) rows per block, at most
constexpr int kDecodeTile = 64;     // keys staged in shared memory at a time
constexpr int kDecodeThreads = 256;
constexpr int kDecodeWarps = kDecodeThreads / 32;
constexpr int kDecodeRowsPerWarp = kDecodeRows / kDecodeWarps;
constexpr int kScoreRowGroups = kDecodeThreads / kDecodeTile;  // threads per key, each every kScoreRowGroups-th row
constexpr int kScoreRowsPerThread = kDecodeRows / kScoreRowGroups;
static_assert(kDecodeThreads % kDecodeTile == 0 && kDecodeRows % kScoreRowGroups == 0, "scores: whole row groups");
static_assert(kDecodeRows % kDecodeWarps == 0, "softmax: whole rows per warp");
static_assert(kDecodeTile == 64, "softmax: each lane takes keys lane and lane + 32");

// Row stride (elements) of the staged keys: an odd number of 16-byte units,
// so the 8 lanes of a quarter-warp reading 16 bytes from 8 consecutive keys
// hit distinct bank groups.
__host__ __device__ inline int64_t decode_key_stride(int64_t E) { return (E / 8) % 2 == 1 ? E : E + 8; }

// Dynamic shared memory of the decode kernel: q rows and scores (fp32), then
// the key and value tiles (input dtype, 2 bytes each).
size_t decode_smem_bytes(int64_t E, int64_t Ev) {
  return sizeof(float) * static_cast<size_t>(kDecodeRows * E + kDecodeRows * kDecodeTile) +
         2 * static_cast<size_t>(kDecodeTile * decode_key_stride(E) + kDecodeTile * Ev);
}

template <typename T>
struct PairOf;
template <>
struct PairOf<__half> {
  using type = __half2;
};
template <>
struct PairOf<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
__device__ inline float2 pair_to_float2(__half2 x) { return __half22float2(x); }
__device__ inline float2 pair_to_float2(__nv_bfloat162 x) { return __bfloat1622float2(x); }

// 8 consecutive 2-byte values (one 16-byte load) as floats.
template <typename T>
__device__ inline void unpack8(const uint4& raw, float (&f)[8]) {
  using T2 = typename PairOf<T>::type;
  const T2* h = reinterpret_cast<const T2*>(&raw);
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const float2 x = pair_to_float2(h[t]);
    f[2 * t] = x.x;
    f[2 * t + 1] = x.y;
  }
}

// Starts copying `n` rows of `width` elements from global `src` (row stride
// `stride`, 16-byte aligned rows) into shared `dst` (row stride `dst_stride`)
// with asynchronous 16-byte copies (cp.async on sm_80+), so every load of the
// tile is in flight at once; the caller commits and waits. Rows n .. `fill` -
// 1 are zero-filled: the readers of the tile never look past `fill` (the
// tensor-core scores read whole groups of 8 keys, P @ V only the n keys), so
// the rest of the tile is left as it is.
//
// Each thread copies one 16-byte column of every (kDecodeThreads / vecs)-th
// row when the vectors of a row divide the block (head dims 64, 128, 256):
// the row and column come from one division per tile instead of one per
// vector, which was a good part of the kernel's instructions.
template <typename T>
__device__ inline void stage_tile(const T* src, int64_t stride, int n, int fill, int width, T* dst,
                                  int dst_stride) {
  const int vecs = width / 8;
  const int tid = static_cast<int>(threadIdx.x);
  const auto put = [&](int j, int cv) {
    T* d = dst + j * dst_stride + cv * 8;
    if (j < n)
      __pipeline_memcpy_async(d, src + j * stride + cv * 8, 16);
    else
      *reinterpret_cast<uint4*>(d) = make_uint4(0u, 0u, 0u, 0u);
  };
  if (kDecodeThreads % vecs == 0) {
    const int rows_per_pass = kDecodeThreads / vecs, cv = tid % vecs;
    for (int j = tid / vecs; j < fill; j += rows_per_pass) put(j, cv);
    return;
  }
  for (int idx = tid; idx < fill * vecs; idx += kDecodeThreads) put(idx / vecs, idx % vecs);
}

// Where load_decode_queries puts the block's query rows: fp32 rows
// [kDecodeRows][E] for the scalar scores (q_s), or the raw T rows with pitch
// decode_q_pitch(E) halves for the tensor-core scores (q_t).
template <typename T>
struct DecodeRowsAsFloat {
  float* rows;
  int pitch;
  __device__ void put8(int r, int e, const uint4& raw) const {
    float f[8];
    unpack8<T>(raw, f);
    float4* dst = reinterpret_cast<float4*>(rows + r * pitch + e);
    dst[0] = make_float4(f[0], f[1], f[2], f[3]);
    dst[1] = make_float4(f[4], f[5], f[6], f[7]);
  }
  __device__ void put(int r, int e, T x) const { rows[r * pitch + e] = load_f(&x, 0); }
};

template <typename T>
struct DecodeRowsAsT {
  uint16_t* rows;
  int pitch;
  __device__ void put8(int r, int e, const uint4& raw) const {
    *reinterpret_cast<uint4*>(rows + r * pitch + e) = raw;
  }
  __device__ void put(int r, int e, T x) const { reinterpret_cast<T*>(rows)[r * pitch + e] = x; }
};

// The block's query rows (zeros past `rows`) into `dst`. Every thread issues
// all its loads before it stores any: a loop of load-then-store waits one L2
// round trip per element, which cost more than the whole key/value read (the
// q rows are tiny). Rows with contiguous, 16-byte aligned head dims take
// 16-byte loads, at most kQVecsPerThread each.
template <typename T, typename Rows>
__device__ inline void load_decode_queries(const AttentionParams& p, int64_t h0, int64_t b, int rows,
                                           const Rows& dst) {
  const T* q = static_cast<const T*>(p.q);
  const int E = static_cast<int>(p.E);
  const int tid = static_cast<int>(threadIdx.x);
  const int L = static_cast<int>(p.L);  // <= kDecodeRows: 32-bit division is enough
  const auto row_offset = [&](int r) {
    const int64_t h = h0 + r / L, i = r % L;
    return b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2];
  };
  const bool vectors = p.q_strides[3] == 1 && p.q_strides[0] % 8 == 0 && p.q_strides[1] % 8 == 0 &&
                       p.q_strides[2] % 8 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0;
  if (vectors) {
    constexpr int kQVecsPerThread = kDecodeRows * static_cast<int>(kMaxAttentionHeadDim) / 8 / kDecodeThreads;
    const int per_row = E / 8;  // E is a multiple of 8 (decode_unsupported)
    uint4 raw[kQVecsPerThread];
#pragma unroll
    for (int t = 0; t < kQVecsPerThread; ++t) {
      const int idx = tid + t * kDecodeThreads, r = idx / per_row;
      raw[t] = make_uint4(0u, 0u, 0u, 0u);
      if (r < rows) raw[t] = *reinterpret_cast<const uint4*>(q + row_offset(r) + (idx % per_row) * 8);
    }
#pragma unroll
    for (int t = 0; t < kQVecsPerThread; ++t) {
      const int idx = tid + t * kDecodeThreads;
      if (idx >= kDecodeRows * per_row) break;
      dst.put8(idx / per_row, (idx % per_row) * 8, raw[t]);
    }
    return;
  }
  constexpr int kBatch = 8;
  for (int base = 0; base < kDecodeRows * E; base += kBatch * kDecodeThreads) {
    T x[kBatch];
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      const int idx = base + tid + t * kDecodeThreads, r = idx / E;
      x[t] = r < rows ? q[row_offset(r) + (idx % E) * p.q_strides[3]] : T(0.0f);
    }
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      const int idx = base + tid + t * kDecodeThreads;
      if (idx < kDecodeRows * E) dst.put(idx / E, idx % E, x[t]);
    }
  }
}

// Scores on tensor cores (sm_80+, head dims that are multiples of 16): the
// block's rows are one m16 tile, so warp w computes S[16 rows][keys 8w ..
// 8w + 7] of the tile with E / 16 mma.sync steps instead of the E-long FMA
// loops of the scalar path. That path's threads each walked the whole head
// dim for their key, which made the scores most of the kernel's serial
// instruction stream (ncu: one instruction per ~7 cycles, one block per SM).
// The query rows are kept as T (exact: they are T in memory) in q_t, rows at
// or past `rows` zero, row pitch decode_q_pitch(E) halves.
__host__ __device__ inline int decode_q_pitch(int64_t E) { return static_cast<int>(E) + 8; }

// Whether the decode kernel computes its scores on tensor cores: the device
// code exists for sm_80+, and the head dim is whole k16 steps.
__device__ inline bool decode_scores_on_tensor_cores(int64_t E) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return E % 16 == 0;
#else
  (void)E;
  return false;
#endif
}

// The query head and query index of each of a decode block's rows (row r is
// head hk * group + r / L, query r % L), worked out once per block: the
// 64-bit divisions were a large share of the kernel's instructions when every
// score recomputed them.
struct DecodeRow {
  int h, i;
};

__device__ inline void fill_decode_rows(const AttentionParams& p, int64_t h0, int rows, DecodeRow* row_s) {
  const int r = static_cast<int>(threadIdx.x);
  if (r < rows) row_s[r] = DecodeRow{static_cast<int>(h0 + r / p.L), static_cast<int>(r % p.L)};
}

// The finished score of the query row `row` against the tile's key c (of n
// valid ones; key n0 + c of the sequence): the dot product scaled, plus the
// bias, or -inf past the tile's keys and above the causal diagonal. Shared by
// the tensor-core and scalar score paths so they cannot drift apart.
__device__ inline float decode_score(const AttentionParams& p, float dot, DecodeRow row, int c, int n, int64_t n0,
                                     int64_t b) {
  const int64_t key = n0 + c;
  const int64_t h = row.h, i = row.i;
  if (c >= n || (p.causal && key > i)) return -CUDART_INF_F;
  float x = dot * p.scale;
  if (p.bias != nullptr)
    x += load_bias(p.bias, p.bias_dtype,
                   b * p.bias_strides[0] + h * p.bias_strides[1] + i * p.bias_strides[2] + key * p.bias_strides[3]);
  return x;
}

// S = Q K^T for the tile's keys n0 .. n0 + n - 1 (k_s: [kDecodeTile][ks],
// keys past n zero-filled), scaled, biased and masked as the scalar path
// does, into p_s[row][key] for rows < `rows`. Warp w owns keys 8w .. 8w + 7;
// the 8 warps cover the whole 64-key tile, so keys past n get -inf as there.
template <typename T>
__device__ inline void decode_scores_mma(const AttentionParams& p, const uint16_t* q_t, const T* k_s, int ks,
                                         int n, int64_t n0, int rows, const DecodeRow* row_s, int64_t b,
                                         float* p_s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static_assert(kDecodeWarps * 8 == kDecodeTile && kDecodeRows == 16, "one m16 tile of rows, 8 keys per warp");
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const int pitch = decode_q_pitch(p.E);
  const uint16_t* k16 = reinterpret_cast<const uint16_t*>(k_s);
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (warp * 8 < n) {  // warp-uniform: a warp whose keys are all past n only writes -inf
    const int steps = static_cast<int>(p.E) / 16;
#pragma unroll 4
    for (int kk = 0; kk < steps; ++kk) {
      const uint16_t* lo = q_t + g * pitch + kk * 16 + 2 * t;  // row g, dims 16kk + 2t ..
      const uint16_t* hi = lo + 8 * pitch;                     // row g + 8
      const uint32_t qa[4] = {lds32(lo), lds32(hi), lds32(lo + 8), lds32(hi + 8)};
      const uint16_t* kr = k16 + (warp * 8 + g) * ks + kk * 16 + 2 * t;  // key 8w + g, dims 16kk + 2t ..
      mma16816(T(), s, qa, lds32(kr), lds32(kr + 8));
    }
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int r = g + (e < 2 ? 0 : 8);               // c0, c1: row g; c2, c3: row g + 8
    const int c = warp * 8 + 2 * t + (e & 1);        // key of the tile
    if (r >= rows) continue;
    p_s[r * kDecodeTile + c] = decode_score(p, s[e], row_s[r], c, n, n0, b);
  }
#else
  // decode_scores_on_tensor_cores is false for this architecture.
  (void)p, (void)q_t, (void)k_s, (void)ks, (void)n, (void)n0, (void)rows, (void)row_s, (void)b, (void)p_s;
  __trap();
#endif
}

template <typename T>
__global__ void __launch_bounds__(kDecodeThreads) attention_decode_kernel(AttentionParams p, SplitArgs a) {
  extern __shared__ __align__(16) unsigned char decode_smem[];
  const int E = static_cast<int>(p.E), Ev = static_cast<int>(p.Ev);
  const int ks = static_cast<int>(decode_key_stride(p.E));
  float* q_s = reinterpret_cast<float*>(decode_smem);  // [kDecodeRows][E]
  float* p_s = q_s + kDecodeRows * E;                  // [kDecodeRows][kDecodeTile] scores, then probabilities
  T* k_s = reinterpret_cast<T*>(p_s + kDecodeRows * kDecodeTile);  // [kDecodeTile][ks]
  T* v_s = k_s + kDecodeTile * ks;                                 // [kDecodeTile][Ev]

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int64_t c = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int64_t group = p.Hq / p.Hk;
  const int rows = static_cast<int>(group * p.L);  // <= kDecodeRows (the launcher checks)
  __shared__ DecodeRow row_s[kDecodeRows];  // published by the first barrier of the key loop, or the one after it
  fill_decode_rows(p, hk * group, rows, row_s);

  // The tensor-core scores read the rows as T from q_t, which takes the
  // place of q_s (16 (E + 8) halves fit in 16 E floats).
  const bool mma_scores = decode_scores_on_tensor_cores(p.E);
  uint16_t* q_t = reinterpret_cast<uint16_t*>(q_s);
  if (mma_scores)
    load_decode_queries<T>(p, hk * group, b, rows, DecodeRowsAsT<T>{q_t, decode_q_pitch(p.E)});
  else
    load_decode_queries<T>(p, hk * group, b, rows, DecodeRowsAsFloat<T>{q_s, E});

  // This chunk's keys; upper-left causal rows see no key at or past L.
  const int64_t kv_end = p.causal && p.L < p.S ? p.L : p.S;
  const int64_t k0 = c * a.chunk;
  const int64_t k1 = k0 + a.chunk < kv_end ? k0 + a.chunk : kv_end;

  const T* k = static_cast<const T*>(p.k) + b * p.k_strides[0] + hk * p.k_strides[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_strides[0] + hk * p.v_strides[1];

  // Softmax / P @ V state of this warp's rows (warp + kDecodeWarps u).
  float m_i[kDecodeRowsPerWarp], l_i[kDecodeRowsPerWarp], acc[kDecodeRowsPerWarp][8];
#pragma unroll
  for (int u = 0; u < kDecodeRowsPerWarp; ++u) {
    m_i[u] = -CUDART_INF_F;
    l_i[u] = 0.0f;
#pragma unroll
    for (int x = 0; x < 8; ++x) acc[u][x] = 0.0f;
  }
  const bool col_ok = lane * 8 < Ev;  // this lane's 8 output columns exist

  // Scores role: key `sj` of the tile, rows `sr0`, sr0 + kScoreRowGroups, ...
  const int sj = tid % kDecodeTile, sr0 = tid / kDecodeTile;

  for (int64_t n0 = k0; n0 < k1; n0 += kDecodeTile) {
    const int n = static_cast<int>(k1 - n0 < kDecodeTile ? k1 - n0 : kDecodeTile);
    __syncthreads();  // the previous tile is consumed (first pass: nothing to wait for but q_s order)
    // Keys are read in whole groups of 8 (tensor-core scores), values only up to n.
    const int k_fill = (n + 7) / 8 * 8;
    stage_tile<T>(k + n0 * p.k_strides[2], p.k_strides[2], n, k_fill, E, k_s, ks);
    stage_tile<T>(v + n0 * p.v_strides[2], p.v_strides[2], n, n, Ev, v_s, Ev);
    __pipeline_commit();
    __pipeline_wait_prior(0);  // this thread's copies have landed
    __syncthreads();           // everyone's have: tiles and q_s are visible to every thread

    // Scores of key sj against this thread's rows (warp-uniform row checks).
    if (mma_scores) {
      decode_scores_mma<T>(p, q_t, k_s, ks, n, n0, rows, row_s, b, p_s);
    } else {
      float dot[kScoreRowsPerThread];
#pragma unroll
      for (int u = 0; u < kScoreRowsPerThread; ++u) dot[u] = 0.0f;
      const T* kr = k_s + sj * ks;
      // Keys past the chunk skip the math (whole warps when n <= 32); their score is -inf below.
      for (int e = 0; sj < n && e < E; e += 8) {
        float kf[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(kr + e), kf);
#pragma unroll
        for (int u = 0; u < kScoreRowsPerThread; ++u) {
          const int r = sr0 + kScoreRowGroups * u;
          if (r < rows) {
            const float4 qa = *reinterpret_cast<const float4*>(q_s + r * E + e);
            const float4 qb = *reinterpret_cast<const float4*>(q_s + r * E + e + 4);
            float d = dot[u];
            d = fmaf(qa.x, kf[0], d);
            d = fmaf(qa.y, kf[1], d);
            d = fmaf(qa.z, kf[2], d);
            d = fmaf(qa.w, kf[3], d);
            d = fmaf(qb.x, kf[4], d);
            d = fmaf(qb.y, kf[5], d);
            d = fmaf(qb.z, kf[6], d);
            d = fmaf(qb.w, kf[7], d);
            dot[u] = d;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kScoreRowsPerThread; ++u) {
        const int r = sr0 + kScoreRowGroups * u;
        if (r >= rows) continue;
        p_s[r * kDecodeTile + sj] = decode_score(p, dot[u], row_s[r], sj, n, n0, b);
      }
    }
    __syncthreads();  // every score of the tile is in p_s

    // Online softmax and P @ V for this warp's rows.
#pragma unroll
    for (int u = 0; u < kDecodeRowsPerWarp; ++u) {
      const int r = warp + kDecodeWarps * u;
      if (r >= rows) continue;  // uniform across the warp
      float* pr = p_s + r * kDecodeTile;
      const float s0 = pr[lane], s1 = pr[lane + 32];
      const float m_new = fmaxf(m_i[u], warp_max(fmaxf(s0, s1)));
      if (m_new == -CUDART_INF_F) continue;  // nothing unmasked yet: keep the empty state (no inf - inf)
      const float alpha = expf(m_i[u] - m_new);  // 0 when m_i was -inf
      const float p0 = expf(s0 - m_new), p1 = expf(s1 - m_new);  // 0 for masked keys
      l_i[u] = l_i[u] * alpha + warp_sum(p0 + p1);
      m_i[u] = m_new;
      __syncwarp();  // every lane has read its scores before they are overwritten
      pr[lane] = p0;
      pr[lane + 32] = p1;
      __syncwarp();  // the row's probabilities are visible to the whole warp
      if (col_ok) {
        float o[8];
#pragma unroll
        for (int x = 0; x < 8; ++x) o[x] = acc[u][x] * alpha;
        for (int j = 0; j < n; ++j) {
          float vf[8];
          unpack8<T>(*reinterpret_cast<const uint4*>(v_s + j * Ev + lane * 8), vf);
          const float pj = pr[j];
#pragma unroll
          for (int x = 0; x < 8; ++x) o[x] = fmaf(pj, vf[x], o[x]);
        }
#pragma unroll
        for (int x = 0; x < 8; ++x) acc[u][x] = o[x];
      }
    }
  }

  // This chunk's partial (max, sum, un-normalised accumulator) per row, in
  // the layout attention_combine_kernel reads.
  __syncthreads();  // row_s is visible even when the chunk had no keys
#pragma unroll
  for (int u = 0; u < kDecodeRowsPerWarp; ++u) {
    const int r = warp + kDecodeWarps * u;
    if (r >= rows) continue;
    const int64_t slot = ((b * p.Hq + row_s[r].h) * p.L + row_s[r].i) * a.splits + c;
    if (col_ok) {
#pragma unroll
      for (int x = 0; x < 8; ++x) a.ws_acc[slot * Ev + lane * 8 + x] = acc[u][x];
    }
    if (lane == 0) {
      a.ws_m[slot] = m_i[u];
      a.ws_l[slot] = l_i[u];
    }
  }
}


int64_t split_row_tiles(const AttentionParams& p) { return ceil_div((p.Hq / p.Hk) * p.L, kSplitRows); }

// Keys any query row can attend to: upper-left causal rows stop at key L - 1.
int64_t visible_keys(const AttentionParams& p) { return p.causal && p.L < p.S ? p.L : p.S; }

template <typename T, int kPer>
Error launch_split_typed(const AttentionParams& p, const AttentionPlan& plan, void* workspace, cudaStream_t stream) {
  SplitArgs a;
  a.row_tiles = split_row_tiles(p);
  a.splits = plan.splits;
  a.chunk = plan.chunk;
  const int64_t rows = p.B * p.Hq * p.L;
  if (a.splits > 1) {
    a.ws_acc = static_cast<float*>(workspace);
    a.ws_m = a.ws_acc + rows * a.splits * p.Ev;
    a.ws_l = a.ws_m + rows * a.splits;
  }
  const int64_t blocks = p.B * p.Hk * a.row_tiles * a.splits;
  if (blocks > 0x7fffffff || rows > 0x7fffffff)
    return set_error(Error::NotSupported, "attention problem too large for one launch");
  attention_split_kernel<T, kPer><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, a);
  KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the split-KV attention kernel"));
  if (a.splits == 1) return Error::Ok;
  attention_combine_kernel<T><<<static_cast<unsigned>(rows), kCombineThreads, 0, stream>>>(p, a);
  return cuda_status(cudaGetLastError(), "launching the split-KV attention merge kernel");
}

// Why the decode kernel cannot take `p` (null when it can): float16/bfloat16;
// at most kDecodeRows flattened rows per (batch, key/value head); head dims
// multiples of 8 (16-byte vectors) up to kMaxAttentionHeadDim; keys and
// values contiguous along the head dim with 16-byte aligned rows (base
// pointer and batch/head/key strides; a stride of a size-1 dim is never
// used); a grid within CUDA's y/z limits. q, out and the mask are read and
// written through their strides, so their layout does not matter.
const char* decode_unsupported(const AttentionParams& p) {
  if (uses_sequence_layout(p)) return "decode attention takes no packed sequences, windows or lse layout options";
  if (p.dtype != DType::Float16 && p.dtype != DType::BFloat16) return "decode attention needs float16/bfloat16";
  if (p.Hk <= 0 || p.Hq % p.Hk != 0 || (p.Hq / p.Hk) * p.L > kDecodeRows)
    return "decode attention takes at most 16 query rows per key/value head";
  if (p.E < 8 || p.Ev < 8 || p.E % 8 != 0 || p.Ev % 8 != 0 || p.E > kMaxAttentionHeadDim ||
      p.Ev > kMaxAttentionHeadDim)
    return "decode attention needs head dims that are multiples of 8 up to 256";
  if (p.B > 65535 || p.Hk > 65535) return "decode attention grid too large";
  if (p.k_strides[3] != 1 || p.v_strides[3] != 1) return "decode attention needs contiguous key/value head dims";
  if (reinterpret_cast<uintptr_t>(p.k) % 16 != 0 || reinterpret_cast<uintptr_t>(p.v) % 16 != 0)
    return "decode attention needs 16-byte aligned keys/values";
  const int64_t sizes[3] = {p.B, p.Hk, p.S};
  for (int d = 0; d < 3; ++d)
    if (sizes[d] > 1 && (p.k_strides[d] % 8 != 0 || p.v_strides[d] % 8 != 0))
      return "decode attention needs 16-byte aligned key/value rows";
  return nullptr;
}

template <typename T>
Error launch_decode_typed(const AttentionParams& p, const AttentionPlan& plan, void* workspace,
                          cudaStream_t stream) {
  SplitArgs a;
  a.row_tiles = 1;
  a.splits = plan.splits;
  a.chunk = plan.chunk;
  const int64_t rows = p.B * p.Hq * p.L;
  if (rows > 0x7fffffff) return set_error(Error::NotSupported, "attention problem too large for one launch");
  a.ws_acc = static_cast<float*>(workspace);
  a.ws_m = a.ws_acc + rows * a.splits * p.Ev;
  a.ws_l = a.ws_m + rows * a.splits;
  const size_t smem = decode_smem_bytes(p.E, p.Ev);
  auto kernel = attention_decode_kernel<T>;
  if (smem > 48 * 1024)
    KILN_RETURN_IF_ERROR(cuda_status(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize) for the decode attention kernel"));
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(p.Hk), static_cast<unsigned>(p.B));
  kernel<<<grid, kDecodeThreads, smem, stream>>>(p, a);
  KILN_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), "launching the decode attention kernel"));
  attention_combine_kernel<T><<<static_cast<unsigned>(rows), kCombineThreads, 0, stream>>>(p, a);
  return cuda_status(cudaGetLastError(), "launching the split-KV attention merge kernel");
}

template <typename T>
Error launch_split_for_type(const AttentionParams& p, const AttentionPlan& plan, void* workspace,
                            cudaStream_t stream) {
  const int64_t d = p.E > p.Ev ? p.E : p.Ev;  // lanes hold dims lane + 32 t of both q/k and v
  if (d <= 32) return launch_split_typed<T, 1>(p, plan, workspace, stream);
  if (d <= 64) return launch_split_typed<T, 2>(p, plan, workspace, stream);
  if (d <= 128) return launch_split_typed<T, 4>(p, plan, workspace, stream);
  return launch_split_typed<T, 8>(p, plan, workspace, stream);
}

template <typename T>
Error launch_for_type(const AttentionParams& p, const AttentionPlan& plan, void* workspace, cudaStream_t stream) {
  if (plan.splits >= 1) return launch_split_for_type<T>(p, plan, workspace, stream);
  if (p.Ev <= 32) return launch_typed<T, 1>(p, stream);
  if (p.Ev <= 64) return launch_typed<T, 2>(p, stream);
  if (p.Ev <= 128) return launch_typed<T, 4>(p, stream);
  return launch_typed<T, 8>(p, stream);
}

// Cuts `keys` into plan.splits chunks of plan.chunk keys (a multiple of
// kChunkAlign, at most kMaxSplits chunks) so that `base_blocks` blocks per
// chunk come to about `target_blocks` blocks in all.
void split_keys(int64_t keys, int64_t base_blocks, int64_t target_blocks, AttentionPlan& plan) {
  int64_t splits = ceil_div(target_blocks, base_blocks);
  const int64_t by_len = ceil_div(keys, kChunkAlign);  // at least kChunkAlign keys per chunk
  if (splits > by_len) splits = by_len;
  if (splits > kMaxSplits) splits = kMaxSplits;
  if (splits < 1) splits = 1;
  int64_t chunk = ceil_div(ceil_div(keys, splits), kChunkAlign) * kChunkAlign;
  if (chunk < kChunkAlign) chunk = kChunkAlign;
  plan.splits = keys > 0 ? ceil_div(keys, chunk) : 1;  // no empty trailing chunks after rounding
  plan.chunk = chunk;
}

// The merge workspace (SplitArgs): per query row and chunk, Ev accumulators,
// a max and a sum.
size_t split_workspace_bytes(const AttentionParams& p, int64_t splits) {
  return sizeof(float) * static_cast<size_t>(p.B * p.Hq * p.L) * static_cast<size_t>(splits) *
         static_cast<size_t>(p.Ev + 2);
}

}  // namespace

AttentionPlan plan_attention(const AttentionParams& p, int sm_count, bool tensor_cores, bool decode) {
  AttentionPlan plan;  // the tiled kernel unless another one is clearly better
  if (p.B <= 0 || p.Hq <= 0 || p.Hk <= 0 || p.Hq % p.Hk != 0 || p.L <= 0 || p.S < 0 || p.Ev <= 0 ||
      p.E > kMaxAttentionHeadDim || p.Ev > kMaxAttentionHeadDim || sm_count <= 0)
    return plan;
  // Per-batch spans and windows: the tensor-core kernel when it can take the
  // call, else the tiled one (split-KV and decode have neither).
  if (uses_sequence_layout(p)) {
    plan.tensor_core = tensor_cores && mma_attention_unsupported(p) == nullptr;
    return plan;
  }
  // Split only when the query is short and the tiled grid cannot give every
  // multiprocessor two blocks; then aim the split grid at that many blocks.
  // Otherwise the tensor-core kernel when it can take the call: its 64-row
  // query tiles do the tiled kernel's work on tensor cores.
  const int64_t target_blocks = 2 * static_cast<int64_t>(sm_count);
  const int64_t keys = visible_keys(p);
  // Short float16/bfloat16 queries whose GQA group fits one block: the decode
  // kernel reads each key/value once for the group, so it beats the others
  // whatever the grid; its chunks aim at target_blocks blocks too. Its
  // partials always go through the workspace and the merge kernel.
  if (decode && decode_unsupported(p) == nullptr) {
    plan.decode = true;
    split_keys(keys, p.B * p.Hk, target_blocks, plan);
    plan.workspace_bytes = split_workspace_bytes(p, plan.splits);
    return plan;
  }
  const int64_t tiled_blocks = ceil_div(p.L, kBlockM) * p.B * p.Hq;
  if (p.L > kSplitMaxQueryLen || tiled_blocks >= target_blocks) {
    plan.tensor_core = tensor_cores && mma_attention_unsupported(p) == nullptr;
    return plan;
  }
  split_keys(keys, p.B * p.Hk * split_row_tiles(p), target_blocks, plan);
  if (plan.splits > 1) plan.workspace_bytes = split_workspace_bytes(p, plan.splits);
  return plan;
}

Error launch_attention(const AttentionParams& p, const AttentionPlan& plan, void* workspace, cudaStream_t stream) {
  if (p.B < 0 || p.Hq < 0 || p.Hk < 0 || p.L < 0 || p.S < 0 || p.E < 0 || p.Ev < 0)
    return set_error(Error::InvalidArgument, "attention with a negative dimension");
  if (p.E > kMaxAttentionHeadDim || p.Ev > kMaxAttentionHeadDim)
    return set_error(Error::NotSupported, "attention head dimension " + std::to_string(p.E) + "/" +
                                              std::to_string(p.Ev) + " exceeds Kiln's limit of " +
                                              std::to_string(kMaxAttentionHeadDim));
  if (p.B == 0 || p.Hq == 0 || p.L == 0 || p.Ev == 0) return Error::Ok;
  if (p.Hk <= 0 || p.Hq % p.Hk != 0)
    return set_error(Error::InvalidArgument, "query heads " + std::to_string(p.Hq) +
                                                 " are not a multiple of key/value heads " + std::to_string(p.Hk));
  if (plan.decode) {
    if (plan.tensor_core)
      return set_error(Error::InvalidArgument, "attention plan asks for both the tensor-core and the decode kernel");
    if (const char* why = decode_unsupported(p))
      return set_error(Error::InvalidArgument, std::string("attention plan picks the decode kernel, but ") + why);
    if (plan.splits < 1 || plan.splits > kMaxSplits || plan.chunk <= 0 || workspace == nullptr ||
        plan.chunk * plan.splits < visible_keys(p))
      return set_error(Error::InvalidArgument, "decode attention plan (" + std::to_string(plan.splits) +
                                                   " splits of " + std::to_string(plan.chunk) +
                                                   " keys) does not fit the problem or lacks its workspace");
    if (p.dtype == DType::Float16) return launch_decode_typed<__half>(p, plan, workspace, stream);
    return launch_decode_typed<__nv_bfloat16>(p, plan, workspace, stream);
  }
  if (plan.tensor_core) {
    if (plan.splits != 0)
      return set_error(Error::InvalidArgument, "attention plan asks for both the tensor-core and the split-KV kernel");
    return launch_mma_attention(p, stream);  // re-checks that the call fits the kernel
  }
  if (plan.splits != 0 && uses_sequence_layout(p))
    return set_error(Error::InvalidArgument,
                     "attention with packed sequences, windows or lse layout options has no split-KV kernel");
  if (plan.splits < 0 || plan.splits > kMaxSplits || (plan.splits >= 1 && plan.chunk <= 0) ||
      (plan.splits > 1 && workspace == nullptr) || (plan.splits >= 1 && plan.chunk * plan.splits < visible_keys(p)))
    return set_error(Error::InvalidArgument, "attention plan (" + std::to_string(plan.splits) + " splits of " +
                                                 std::to_string(plan.chunk) +
                                                 " keys) does not fit the problem or lacks its workspace");
  switch (p.dtype) {
    case DType::Float32: return launch_for_type<float>(p, plan, workspace, stream);
    case DType::Float16: return launch_for_type<__half>(p, plan, workspace, stream);
    case DType::BFloat16: return launch_for_type<__nv_bfloat16>(p, plan, workspace, stream);
    default:
      return set_error(Error::NotSupported, std::string("attention of dtype ") + dtype_name(p.dtype) +
                                                " (supported: float32, float16, bfloat16)");
  }
}

}  // namespace kiln::cudadev
