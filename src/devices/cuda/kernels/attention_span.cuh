// The per-batch view of an attention call shared by the tiled and the
// tensor-core kernels: where a batch's queries and keys start (packed
// variable-length batches), how many there are, and which keys each query
// row sees (causal diagonal and sliding window, aligned to the top left or
// the bottom right). See AttentionParams for the fields it reads.
#pragma once

#include <cstdint>

#include "devices/cuda/kernels/attention_kernel.h"

namespace kiln::cudadev {

// The rows and keys of one batch and the key range each of its query rows
// sees (sequence layout: packed batches, alignment, window; see
// AttentionParams). Query i sees key j when lo(i) <= j <= hi(i) and j < keys.
struct BatchSpan {
  int64_t q_off = 0, k_off = 0;  // first packed row of the batch's queries / keys
  int64_t rows = 0, keys = 0;    // its query rows (at most L) and keys (at most S)
  int64_t diag = 0;              // key index on query 0's diagonal
  bool has_lo = false, has_hi = false;
  int64_t lo_rel = 0, hi_rel = 0;  // lo(i) = i + diag - lo_rel, hi(i) = i + diag + hi_rel

  __device__ int64_t lo(int64_t i) const { return has_lo ? i + diag - lo_rel : 0; }
  __device__ int64_t hi(int64_t i) const { return has_hi ? i + diag + hi_rel : keys - 1; }
  __device__ bool sees(int64_t i, int64_t key) const {
    return key >= 0 && key < keys && key >= lo(i) && key <= hi(i);
  }
};

__device__ inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

__device__ inline BatchSpan batch_span(const AttentionParams& p, int64_t b) {
  BatchSpan s;
  s.rows = p.L;
  s.keys = p.S;
  if (p.cu_seqlens_q != nullptr && p.cu_seqlens_k != nullptr) {
    // Clamped so that malformed offsets cannot address past the packed rows.
    s.q_off = clamp64(p.cu_seqlens_q[b], 0, p.q_rows);
    s.k_off = clamp64(p.cu_seqlens_k[b], 0, p.k_rows);
    s.rows = clamp64(static_cast<int64_t>(p.cu_seqlens_q[b + 1]) - s.q_off, 0, p.q_rows - s.q_off);
    s.keys = clamp64(static_cast<int64_t>(p.cu_seqlens_k[b + 1]) - s.k_off, 0, p.k_rows - s.k_off);
    if (s.rows > p.L) s.rows = p.L;
    if (s.keys > p.S) s.keys = p.S;
  }
  s.diag = p.bottom_right ? s.keys - s.rows : 0;
  s.has_lo = p.window_left >= 0;
  s.lo_rel = p.window_left;
  s.has_hi = p.causal || p.window_right >= 0;
  s.hi_rel = p.window_right >= 0 ? p.window_right : 0;
  if (p.causal && s.hi_rel > 0) s.hi_rel = 0;
  return s;
}

}  // namespace kiln::cudadev
