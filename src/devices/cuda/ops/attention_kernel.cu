#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math_constants.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/ops/attention_kernel.h"

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

__device__ inline float load_bias(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::Bool: return static_cast<const bool*>(p)[i] ? 0.0f : -CUDART_INF_F;
    case DType::Float16: return __half2float(static_cast<const __half*>(p)[i]);
    case DType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
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

  float* q_s = smem;                          // [kBlockM][E]
  float* k_s = q_s + kBlockM * E;             // [kBlockN][E + 1] (padded: fewer bank conflicts)
  float* v_s = k_s + kBlockN * (E + 1);       // [kBlockN][Ev]
  float* p_s = v_s + kBlockN * Ev;            // [kWarps][32]

  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const int64_t q_base = b * p.q_strides[0] + h * p.q_strides[1];
  const int64_t k_base = b * p.k_strides[0] + hk * p.k_strides[1];
  const int64_t v_base = b * p.v_strides[0] + hk * p.v_strides[1];

  for (int64_t idx = threadIdx.x; idx < kBlockM * E; idx += kThreads) {
    const int64_t r = idx / E, e = idx % E, i = m0 + r;
    q_s[idx] = i < p.L ? load_f(q, q_base + i * p.q_strides[2] + e * p.q_strides[3]) : 0.0f;
  }

  float m_i[kRowsPerWarp], l_i[kRowsPerWarp], acc[kRowsPerWarp][kEvPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m_i[r] = -CUDART_INF_F;
    l_i[r] = 0.0f;
#pragma unroll
    for (int t = 0; t < kEvPerLane; ++t) acc[r][t] = 0.0f;
  }

  // Causal: no key past the block's last row can contribute.
  int64_t n_end = p.S;
  if (p.causal && m0 + kBlockM < n_end) n_end = m0 + kBlockM;

  for (int64_t n0 = 0; n0 < n_end; n0 += kBlockN) {
    __syncthreads();  // the previous tile is consumed (and q_s is written on the first pass)
    for (int64_t idx = threadIdx.x; idx < kBlockN * E; idx += kThreads) {
      const int64_t j = idx / E, e = idx % E, key = n0 + j;
      k_s[j * (E + 1) + e] = key < p.S ? load_f(k, k_base + key * p.k_strides[2] + e * p.k_strides[3]) : 0.0f;
    }
    for (int64_t idx = threadIdx.x; idx < kBlockN * Ev; idx += kThreads) {
      const int64_t j = idx / Ev, e = idx % Ev, key = n0 + j;
      v_s[idx] = key < p.S ? load_f(v, v_base + key * p.v_strides[2] + e * p.v_strides[3]) : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r;
      const int64_t i = m0 + row;
      if (i >= p.L) continue;  // uniform across the warp
      const int64_t key = n0 + lane;
      float s = -CUDART_INF_F;
      if (key < p.S && !(p.causal && key > i)) {
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
  const int64_t o_base = b * p.out_strides[0] + h * p.out_strides[1];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = m0 + warp * kRowsPerWarp + r;
    if (i >= p.L) continue;
    const float inv = l_i[r] > 0.0f ? 1.0f / l_i[r] : 0.0f;
#pragma unroll
    for (int t = 0; t < kEvPerLane; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < Ev) store_f(out, o_base + i * p.out_strides[2] + e * p.out_strides[3], acc[r][t] * inv);
    }
    if (p.lse != nullptr && lane == 0)
      p.lse[b * p.lse_strides[0] + h * p.lse_strides[1] + i * p.lse_strides[2]] =
          l_i[r] > 0.0f ? m_i[r] + logf(l_i[r]) : -CUDART_INF_F;
  }
}

template <typename T, int kEvPerLane>
Error launch_typed(const AttentionParams& p, cudaStream_t stream) {
  const int64_t m_tiles = (p.L + kBlockM - 1) / kBlockM;
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

template <typename T>
Error launch_for_type(const AttentionParams& p, cudaStream_t stream) {
  if (p.Ev <= 32) return launch_typed<T, 1>(p, stream);
  if (p.Ev <= 64) return launch_typed<T, 2>(p, stream);
  if (p.Ev <= 128) return launch_typed<T, 4>(p, stream);
  return launch_typed<T, 8>(p, stream);
}

}  // namespace

Error launch_attention(const AttentionParams& p, cudaStream_t stream) {
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
  switch (p.dtype) {
    case DType::Float32: return launch_for_type<float>(p, stream);
    case DType::Float16: return launch_for_type<__half>(p, stream);
    case DType::BFloat16: return launch_for_type<__nv_bfloat16>(p, stream);
    default:
      return set_error(Error::NotSupported, std::string("attention of dtype ") + dtype_name(p.dtype) +
                                                " (supported: float32, float16, bfloat16)");
  }
}

}  // namespace kiln::cudadev
