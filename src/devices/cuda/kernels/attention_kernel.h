// Kiln's one scaled-dot-product attention kernel (forward only), behind every
// SDPA fallback shim: tiled over keys with an online softmax (running max and
// sum per query row), so memory is O(tile) whatever the sequence length.
// float32, float16 and bfloat16 inputs; float32 accumulation; causal masking
// (upper-left aligned, as torch's is_causal); an optional additive bias or
// boolean keep-mask broadcast over (batch, head, query, key); grouped-query
// attention when query heads are a multiple of key/value heads.
//
// Fully masked query rows produce zeros and a logsumexp of -inf.
//
// Three kernels share these semantics. The tiled one gives each block 16
// query rows of one (batch, head) and walks all keys with scalar FMA math; it
// takes every dtype and head dim. For short queries (decode) that grid is far
// too small to fill the GPU, so a split-KV ("flash decoding") path cuts the
// key range into chunks handled by separate blocks, whose warps split the
// chunk's keys among themselves; each block leaves an un-normalised partial
// result (row max, row sum, fp32 accumulator) in a workspace and a small
// second kernel merges the chunks. For float16/bfloat16 decode whose GQA
// group (query heads per key/value head x query rows) is at most 16 rows and
// whose keys/values are 16-byte-vector loadable, a decode kernel replaces
// split-KV: each block stages a chunk of keys and values in shared memory
// with coalesced 16-byte loads, once for the whole group, scores every row
// against it and leaves the same partials for the same merge kernel (masks,
// bias and causal included). For everything else in float16/bfloat16
// with head dim 64, 128 or 256 on sm_80+, a tensor-core kernel
// (attention_mma_kernel.h) does the work of the tiled one several times
// faster. plan_attention chooses among them and sizes the workspace.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>

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

  // The rest serves the flash / memory-efficient attention ops, which take
  // packed variable-length batches and sliding windows; the tiled and the
  // tensor-core kernels implement it, split-KV and decode do not (see
  // uses_sequence_layout).

  /// Packed variable-length batches (both or neither): batch b's queries are
  /// rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 along q's and out's
  /// sequence dimension (strides[2]), its keys likewise; int32 [B + 1] on the
  /// device. L and S are then the longest query/key lengths (the grid covers
  /// L rows per batch), and q_rows / k_rows the packed row counts, which clamp
  /// malformed offsets so that no access leaves the tensors.
  const int32_t* cu_seqlens_q = nullptr;
  const int32_t* cu_seqlens_k = nullptr;
  int64_t q_rows = 0, k_rows = 0;
  /// Causal diagonal and window aligned to each batch's last query and key
  /// (offset = keys - queries), as the flash kernel does, instead of its first.
  bool bottom_right = false;
  /// Sliding window: query i sees key j only when j >= i + offset - window_left
  /// (window_left >= 0) and j <= i + offset + window_right (window_right >= 0);
  /// -1 leaves that side open. causal bounds the right side at 0 as well.
  int64_t window_left = -1, window_right = -1;
  /// lse's row index is the packed row (cu_seqlens_q[b] + i), not i.
  bool lse_packed = false;
  /// lse of a row that sees no key (ATen's flash kernel writes +inf there).
  float lse_masked = -std::numeric_limits<float>::infinity();
  /// When > 0, lse rows per (batch, head) to define: rows from the batch's
  /// query length up to this get +inf (the memory-efficient kernel's padding).
  int64_t lse_rows = 0;
};

/// Whether `p` uses any of the fields above past `causal` (packed batches,
/// bottom-right alignment, windows, lse layout options): such calls run on
/// the tensor-core or the tiled kernel, never split-KV or decode.
inline bool uses_sequence_layout(const AttentionParams& p) {
  return p.cu_seqlens_q != nullptr || p.cu_seqlens_k != nullptr || p.bottom_right || p.window_left >= 0 ||
         p.window_right >= 0 || p.lse_packed || p.lse_rows > 0 ||
         p.lse_masked != -std::numeric_limits<float>::infinity();
}

/// How one attention call runs (from plan_attention).
struct AttentionPlan {
  bool tensor_core = false;    ///< the tensor-core kernel (then splits is 0)
  bool decode = false;         ///< the decode kernel over `splits` chunks of `chunk` keys, then the merge
  int64_t splits = 0;          ///< 0: the tiled kernel; >= 1: split-KV (or decode) over this many key chunks
  int64_t chunk = 0;           ///< keys per chunk (split-KV and decode)
  size_t workspace_bytes = 0;  ///< device scratch launch_attention needs (0 when split-KV has 1 chunk)
};

/// Picks the kernel for `params` on a device with `sm_count` multiprocessors:
/// the decode kernel when it can take the call; split-KV for other short
/// queries on a small grid; otherwise the tensor-core
/// kernel when `tensor_cores` (mma_attention_available for the device) and
/// the call fits it (mma_attention_unsupported); otherwise the tiled kernel.
/// Pure host arithmetic (no CUDA calls). `decode` false rules the decode
/// kernel out (a benchmark times split-KV against it).
AttentionPlan plan_attention(const AttentionParams& params, int sm_count, bool tensor_cores, bool decode = true);

/// Validates the parameters and launches on `stream` (asynchronous).
/// `workspace` must hold plan.workspace_bytes of device memory usable on
/// `stream` until the launched work has finished (null when that is 0).
Error launch_attention(const AttentionParams& params, const AttentionPlan& plan, void* workspace,
                       cudaStream_t stream);

}  // namespace kiln::cudadev
