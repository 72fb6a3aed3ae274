// Kiln's one scaled-dot-product attention kernel (forward only), behind every
// SDPA fallback shim: tiled over keys with an online softmax (running max and
// sum per query row), so memory is O(tile) whatever the sequence length.
// float32, float16 and bfloat16 inputs; float32 accumulation; causal masking
// (upper-left aligned, as torch's is_causal); an optional additive bias or
// boolean keep-mask broadcast over (batch, head, query, key); grouped-query
// attention when query heads are a multiple of key/value heads.
//
// Fully masked query rows produce zeros and a logsumexp of -inf.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// Largest head dimension (of q/k and of v) the kernel supports.
inline constexpr int64_t kMaxAttentionHeadDim = 256;

struct AttentionParams {
  const void* q = nullptr;  ///< [B, Hq, L, E]
  const void* k = nullptr;  ///< [B, Hk, S, E]
  const void* v = nullptr;  ///< [B, Hk, S, Ev]
  void* out = nullptr;      ///< [B, Hq, L, Ev], same dtype as q
  float* lse = nullptr;     ///< [B, Hq, L] natural-log logsumexp of the scaled scores; may be null
  const void* bias = nullptr;   ///< broadcast to [B, Hq, L, S] through bias_strides; may be null
  DType bias_dtype = DType::Float32;  ///< Float32/Float16/BFloat16 (added) or Bool (true = attend)
  DType dtype = DType::Float32;       ///< of q, k, v and out
  int64_t B = 0, Hq = 0, Hk = 0, L = 0, S = 0, E = 0, Ev = 0;
  int64_t q_strides[4] = {}, k_strides[4] = {}, v_strides[4] = {}, out_strides[4] = {}, bias_strides[4] = {};
  int64_t lse_strides[3] = {};
  float scale = 1.0f;
  bool causal = false;
};

/// Validates the parameters and launches on `stream` (asynchronous).
Error launch_attention(const AttentionParams& params, cudaStream_t stream);

}  // namespace kiln::cudadev
