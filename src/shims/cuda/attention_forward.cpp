// aoti_torch_cuda__flash_attention_forward and
// aoti_torch_cuda__efficient_attention_forward: the attention kernels below
// SDPA, called directly (torch.nn.attention.varlen_attn, xformers-style
// code), on Kiln's own attention kernel (kernels/attention_kernel.h), forward
// only. Both take dense batches and packed variable-length ones (int32
// cumulative offsets [B + 1] into a packed sequence dimension); the flash op
// also takes grouped-query attention and a sliding window, the
// memory-efficient one an additive bias and a causal mask aligned to either
// corner. Results have the shapes, dtypes and strides of ATen's meta
// functions; the philox outputs are zero, since dropout must be 0.
//
// One difference from ATen 2.11, on purpose: with a bottom-right causal mask
// and more queries than keys, ATen's memory-efficient kernel masks nothing in
// its first block of queries (its negative diagonal offset is added to an
// unsigned query index and wraps), so rows that should see no key attend to
// every key. Kiln applies the mask to every row: such rows are zeros, with a
// logsumexp of 0.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "shims/common/shim_util.h"
#include "shims/cuda/attention_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/tensor_ref.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

bool present(AtenTensorHandle* h) { return h != nullptr && *h != nullptr; }

void give(AtenTensorHandle* ret, OwnedHandle& h) {
  if (ret != nullptr) *ret = h.release();
}

// One of the cumulative sequence offsets: int32, 1-D, contiguous, at least
// one entry, on the query's device.
Result<TensorRef> read_offsets(AtenTensorHandle h, const char* name, const TensorRef& q) {
  KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(h, name));
  if (t.dtype != DType::Int32)
    return set_error(Error::InvalidArgument, std::string(name) + " must be int32, got " + t.describe());
  if (t.dim() != 1 || t.sizes[0] < 1 || (t.sizes[0] > 1 && t.strides[0] != 1))
    return set_error(Error::InvalidArgument,
                     std::string(name) + " must be a contiguous 1-D tensor of batch + 1 offsets, got " + t.describe());
  if (t.device_index != q.device_index)
    return set_error(Error::InvalidArgument, std::string(name) + " must be on the query's CUDA device");
  return t;
}

float default_scale(double* scale, int64_t head_dim) {
  if (scale != nullptr) return static_cast<float>(*scale);
  return head_dim > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim))) : 1.0f;
}

// The kernel's view of a [batch, seq, heads, dim] (dense) or [total, heads,
// dim] (packed) tensor: strides of [batch, heads, seq, dim], with no batch
// stride when packed (the batch's rows come from the offsets).
void set_strides(const TensorRef& t, bool packed, int64_t out[4]) {
  if (packed) {
    out[0] = 0;
    out[1] = t.strides[1];
    out[2] = t.strides[0];
    out[3] = t.strides[2];
  } else {
    out[0] = t.strides[0];
    out[1] = t.strides[2];
    out[2] = t.strides[1];
    out[3] = t.strides[3];
  }
}

// The flash kernel's key window, reduced to the bounds that can mask
// anything. ATen's rules first: a side at least as wide as the longest key
// sequence is open; a one-row query is never causal; causal closes the right
// side at the diagonal; a window open on one side only gets the longest key
// length on the other. Both sides are aligned to the bottom right (the
// diagonal of query i is key i + keys - queries of its batch). Then a left
// bound of at least max_k - 1 never excludes a key (row i's lowest key would
// be i + keys - queries - left <= keys - 1 - left), nor does a right bound of
// at least max_q - 1 (row 0's highest would be keys - queries + right).
struct FlashWindow {
  int64_t left = -1, right = -1;
};

FlashWindow flash_window(bool is_causal, const int64_t* window_left, const int64_t* window_right, int64_t max_q,
                         int64_t max_k) {
  int64_t left = window_left != nullptr && *window_left >= 0 ? *window_left : -1;
  int64_t right = window_right != nullptr && *window_right >= 0 ? *window_right : -1;
  if (left >= max_k) left = -1;
  if (right >= max_k) right = -1;
  if (max_q == 1) is_causal = false;
  if (is_causal) right = 0;
  if (left < 0 && right >= 0) left = max_k;
  if (left >= 0 && right < 0) right = max_k;
  if (left >= max_k - 1) left = -1;
  if (right >= max_q - 1) right = -1;
  return {left, right};
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__flash_attention_forward(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* cum_seq_q,
    AtenTensorHandle* cum_seq_k, int64_t max_q, int64_t max_k, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, int64_t* window_size_left, int64_t* window_size_right,
    AtenTensorHandle* seqused_k, AtenTensorHandle* alibi_slopes, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3, AtenTensorHandle* ret4) {
  return aoti::guarded("aoti_torch_cuda__flash_attention_forward", [&]() -> Error {
    if (dropout_p != 0.0)
      return set_error(Error::NotSupported,
                       "dropout_p must be 0 for inference (got " + std::to_string(dropout_p) + ")");
    if (return_debug_mask != 0)
      return set_error(Error::NotSupported, "return_debug_mask is only meaningful with dropout, which Kiln does not run");
    if (present(seqused_k))
      return set_error(Error::NotSupported, "seqused_k (keys used per batch below cum_seq_k) is not supported");
    if (present(alibi_slopes)) return set_error(Error::NotSupported, "alibi_slopes is not supported");
    KILN_ASSIGN_OR_RETURN(TensorRef q, read_tensor(query, "query"));
    KILN_ASSIGN_OR_RETURN(TensorRef k, read_tensor(key, "key"));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(value, "value"));
    if (q.dtype != DType::Float16 && q.dtype != DType::BFloat16)
      return set_error(Error::NotSupported, std::string("flash attention takes float16 and bfloat16 only, got ") +
                                                dtype_name(q.dtype));
    if (k.dtype != q.dtype || v.dtype != q.dtype)
      return set_error(Error::InvalidArgument, "query, key and value must share a dtype");
    if (k.device_index != q.device_index || v.device_index != q.device_index)
      return set_error(Error::InvalidArgument, "query, key and value must be on the same CUDA device");
    if (present(cum_seq_q) != present(cum_seq_k))
      return set_error(Error::InvalidArgument, "cum_seq_q and cum_seq_k must be given together");
    const bool packed = present(cum_seq_q);
    const int64_t rank = packed ? 3 : 4;
    if (q.dim() != rank || k.dim() != rank || v.dim() != rank)
      return set_error(Error::InvalidArgument,
                       std::string("query/key/value must be ") +
                           (packed ? "3-D [total, heads, dim] with cum_seq_q/cum_seq_k"
                                   : "4-D [batch, seq, heads, dim]") +
                           "; got " + q.describe() + ", " + k.describe() + ", " + v.describe());
    const int64_t seq = packed ? 0 : 1, heads = rank - 2, dim = rank - 1;
    const int64_t Hq = q.sizes[heads], Hk = k.sizes[heads], D = q.sizes[dim];
    if (k.sizes[dim] != D || v.sizes[dim] != D || v.sizes[heads] != Hk || v.sizes[seq] != k.sizes[seq] ||
        (!packed && (k.sizes[0] != q.sizes[0] || v.sizes[0] != q.sizes[0])) || (Hk == 0 && Hq != 0) ||
        (Hk > 0 && Hq % Hk != 0))
      return set_error(Error::InvalidArgument, "incompatible query " + q.describe() + ", key " + k.describe() +
                                                   ", value " + v.describe() +
                                                   " (key/value heads must divide query heads)");
    if (D > kMaxAttentionHeadDim)
      return set_error(Error::NotSupported, "flash attention head dimension " + std::to_string(D) +
                                                " exceeds " + std::to_string(kMaxAttentionHeadDim));

    AttentionParams p;
    TensorRef cq, ck;
    if (packed) {
      KILN_ASSIGN_OR_RETURN(cq, read_offsets(*cum_seq_q, "cum_seq_q", q));
      KILN_ASSIGN_OR_RETURN(ck, read_offsets(*cum_seq_k, "cum_seq_k", q));
      if (ck.sizes[0] != cq.sizes[0])
        return set_error(Error::InvalidArgument, "cum_seq_q " + cq.describe() + " and cum_seq_k " + ck.describe() +
                                                     " must have the same length");
      if (max_q < 0 || max_k < 0)
        return set_error(Error::InvalidArgument, "max_q and max_k must be non-negative");
      p.B = cq.sizes[0] - 1;
      p.L = max_q;
      p.S = max_k;
      p.cu_seqlens_q = static_cast<const int32_t*>(cq.data);
      p.cu_seqlens_k = static_cast<const int32_t*>(ck.data);
      p.q_rows = q.sizes[0];
      p.k_rows = k.sizes[0];
    } else {
      p.B = q.sizes[0];
      p.L = q.sizes[1];
      p.S = k.sizes[1];
    }
    p.Hq = Hq;
    p.Hk = Hk;
    p.E = D;
    p.Ev = D;
    p.dtype = q.dtype;
    p.scale = default_scale(scale, D);
    const FlashWindow w = flash_window(is_causal != 0, window_size_left, window_size_right, p.L, p.S);
    // Bottom-right alignment equals top-left on a dense square batch, where
    // a plain causal mask (or none) lets the faster kernels take the call.
    const bool square = !packed && p.L == p.S;
    if (square && w.left < 0) {
      p.causal = w.right == 0;
      p.window_right = w.right > 0 ? w.right : -1;
    } else {
      p.bottom_right = w.left >= 0 || w.right >= 0;
      p.window_left = w.left;
      p.window_right = w.right;
    }
    // A row that sees no key has an lse of +inf in ATen's flash kernel;
    // without windows every row of a dense batch with keys sees key 0.
    if (packed || p.bottom_right || p.window_left >= 0 || p.window_right >= 0 || p.S == 0) p.lse_masked = kInf;

    const int dev = q.device_index;
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_cuda_tensor(q.sizes, attention_like_query(q, q.sizes), q.dtype, dev));
    // logsumexp: [B, Hq, L] dense, [Hq, total_q] packed.
    const std::vector<int64_t> lse_shape = packed ? std::vector<int64_t>{Hq, q.sizes[0]}
                                                  : std::vector<int64_t>{p.B, Hq, p.L};
    KILN_ASSIGN_OR_RETURN(OwnedHandle lse,
                          new_cuda_tensor(lse_shape, contiguous_strides(lse_shape), DType::Float32, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "output"));
    KILN_ASSIGN_OR_RETURN(TensorRef l, read_tensor(lse.get(), "logsumexp"));
    p.q = q.data;
    p.k = k.data;
    p.v = v.data;
    p.out = o.data;
    p.lse = static_cast<float*>(l.data);
    set_strides(q, packed, p.q_strides);
    set_strides(k, packed, p.k_strides);
    set_strides(v, packed, p.v_strides);
    set_strides(o, packed, p.out_strides);
    if (packed) {
      p.lse_packed = true;
      p.lse_strides[0] = 0;
      p.lse_strides[1] = q.sizes[0];
      p.lse_strides[2] = 1;
    } else {
      p.lse_strides[0] = Hq * p.L;
      p.lse_strides[1] = p.L;
      p.lse_strides[2] = 1;
    }
    if (q.numel() > 0) KILN_RETURN_IF_ERROR(run_attention(p, dev));

    // rng_state (uint64 [2]) and the unused uint64 scalar on the query's
    // device, as ATen's flash kernel allocates them whether or not it runs
    // dropout, here zero; the debug mask empty.
    KILN_ASSIGN_OR_RETURN(OwnedHandle rng, zero_cuda_tensor({2}, DType::UInt64, dev));
    KILN_ASSIGN_OR_RETURN(OwnedHandle unused, zero_cuda_tensor({}, DType::UInt64, dev));
    KILN_ASSIGN_OR_RETURN(OwnedHandle debug, new_cuda_tensor({0}, {1}, q.dtype, dev));
    give(ret0, out);
    give(ret1, lse);
    give(ret2, rng);
    give(ret3, unused);
    give(ret4, debug);
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__efficient_attention_forward(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* bias,
    AtenTensorHandle* cu_seqlens_q, AtenTensorHandle* cu_seqlens_k, int64_t* max_seqlen_q, int64_t* max_seqlen_k,
    double dropout_p, int64_t custom_mask_type, int32_t compute_log_sumexp, double* scale,
    AtenTensorHandle* seqlen_k, int64_t* window_size, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5) {
  return aoti::guarded("aoti_torch_cuda__efficient_attention_forward", [&]() -> Error {
    if (dropout_p != 0.0)
      return set_error(Error::NotSupported,
                       "dropout_p must be 0 for inference (got " + std::to_string(dropout_p) + ")");
    if (present(seqlen_k))
      return set_error(Error::NotSupported, "seqlen_k (keys used per batch below cu_seqlens_k) is not supported");
    if (window_size != nullptr && *window_size > 0)
      return set_error(Error::NotSupported, "window_size (local attention) is not supported");
    if (custom_mask_type < 0 || custom_mask_type > 2)
      return set_error(Error::InvalidArgument,
                       "custom_mask_type must be 0 (none), 1 (causal from the top left) or 2 (causal from the bottom "
                       "right), got " + std::to_string(custom_mask_type));
    KILN_ASSIGN_OR_RETURN(TensorRef q, read_tensor(query, "query"));
    KILN_ASSIGN_OR_RETURN(TensorRef k, read_tensor(key, "key"));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(value, "value"));
    if (q.dtype != DType::Float32 && q.dtype != DType::Float16 && q.dtype != DType::BFloat16)
      return set_error(Error::NotSupported,
                       std::string("memory-efficient attention takes float32, float16 and bfloat16, got ") +
                           dtype_name(q.dtype));
    if (k.dtype != q.dtype || v.dtype != q.dtype)
      return set_error(Error::InvalidArgument, "query, key and value must share a dtype");
    if (k.device_index != q.device_index || v.device_index != q.device_index)
      return set_error(Error::InvalidArgument, "query, key and value must be on the same CUDA device");
    if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
      return set_error(Error::InvalidArgument, "query/key/value must be 4-D [batch, seq, heads, dim]; got " +
                                                   q.describe() + ", " + k.describe() + ", " + v.describe());
    const int64_t B = q.sizes[0], M = q.sizes[1], H = q.sizes[2], K = q.sizes[3];
    const int64_t N = k.sizes[1], Kv = v.sizes[3];
    // As ATen's kernel: equal batches and heads (no grouped-query attention),
    // key and value of one length, query and key of one head dim.
    if (k.sizes[0] != B || v.sizes[0] != B || v.sizes[1] != N || k.sizes[2] != H || v.sizes[2] != H ||
        k.sizes[3] != K)
      return set_error(Error::InvalidArgument, "incompatible query " + q.describe() + ", key " + k.describe() +
                                                   ", value " + v.describe());
    if (present(cu_seqlens_q) != present(cu_seqlens_k))
      return set_error(Error::InvalidArgument, "cu_seqlens_q and cu_seqlens_k must be given together");
    const bool packed = present(cu_seqlens_q);

    AttentionParams p;
    int64_t max_q_out = M;
    if (packed) {
      if (B != 1)
        return set_error(Error::InvalidArgument,
                         "with cu_seqlens_q the batch dimension must be 1 (sequences are packed along dim 1), got " +
                             q.describe());
      if (max_seqlen_q == nullptr)
        return set_error(Error::InvalidArgument, "max_seqlen_q must be given with cu_seqlens_q");
      if (*max_seqlen_q < 0) return set_error(Error::InvalidArgument, "max_seqlen_q must be non-negative");
      if (present(bias))
        return set_error(Error::NotSupported, "a bias with packed variable-length sequences is not supported");
      KILN_ASSIGN_OR_RETURN(TensorRef cq, read_offsets(*cu_seqlens_q, "cu_seqlens_q", q));
      KILN_ASSIGN_OR_RETURN(TensorRef ck, read_offsets(*cu_seqlens_k, "cu_seqlens_k", q));
      if (ck.sizes[0] != cq.sizes[0])
        return set_error(Error::InvalidArgument, "cu_seqlens_q " + cq.describe() + " and cu_seqlens_k " +
                                                     ck.describe() + " must have the same length");
      max_q_out = *max_seqlen_q;
      p.B = cq.sizes[0] - 1;
      p.L = max_q_out;
      p.S = N;  // each batch's keys come from cu_seqlens_k; N bounds them
      p.cu_seqlens_q = static_cast<const int32_t*>(cq.data);
      p.cu_seqlens_k = static_cast<const int32_t*>(ck.data);
      p.q_rows = M;
      p.k_rows = N;
    } else {
      p.B = B;
      p.L = M;
      p.S = N;
    }
    const int64_t max_k_out = max_seqlen_k != nullptr ? *max_seqlen_k : N;
    p.Hq = H;
    p.Hk = H;
    p.E = K;
    p.Ev = Kv;
    p.dtype = q.dtype;
    p.scale = default_scale(scale, K);
    p.causal = custom_mask_type != 0;
    // Bottom-right alignment equals top-left on a dense square batch.
    p.bottom_right = custom_mask_type == 2 && (packed || M != N);
    // A row that sees no key: zeros and a logsumexp of 0 in ATen's kernel
    // (it takes such a row's max as 0 and its sum as 1). Only a bias, packed
    // batches, a bottom-right mask with more queries than keys or no keys at
    // all can make one; otherwise the kernel's default stays, which keeps the
    // split-KV and decode kernels available.
    if (present(bias) || packed || (p.bottom_right && M > N) || N == 0) p.lse_masked = 0.0f;

    const int dev = q.device_index;
    const std::vector<int64_t> out_shape = {B, M, H, Kv};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_cuda_tensor(out_shape, contiguous_strides(out_shape), q.dtype, dev));
    // logsumexp [batches, H, max_q rounded up to 32] ([.., .., 0] unless
    // asked for); ATen's kernel writes +inf past each batch's queries.
    const int64_t lse_len = compute_log_sumexp != 0 ? (max_q_out + 31) / 32 * 32 : 0;
    const std::vector<int64_t> lse_shape = {p.B, H, lse_len};
    KILN_ASSIGN_OR_RETURN(OwnedHandle lse,
                          new_cuda_tensor(lse_shape, contiguous_strides(lse_shape), DType::Float32, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "output"));
    p.q = q.data;
    p.k = k.data;
    p.v = v.data;
    p.out = o.data;
    set_strides(q, false, p.q_strides);
    set_strides(k, false, p.k_strides);
    set_strides(v, false, p.v_strides);
    set_strides(o, false, p.out_strides);
    if (packed) {  // one packed batch row: sequences come from the offsets
      p.q_strides[0] = p.k_strides[0] = p.v_strides[0] = p.out_strides[0] = 0;
    }
    if (lse_len > 0 && p.B * H > 0) {
      KILN_ASSIGN_OR_RETURN(TensorRef l, read_tensor(lse.get(), "logsumexp"));
      p.lse = static_cast<float*>(l.data);
      p.lse_strides[0] = H * lse_len;
      p.lse_strides[1] = lse_len;
      p.lse_strides[2] = 1;
      if (packed || lse_len > p.L) p.lse_rows = lse_len;
    }
    if (present(bias)) {
      KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(*bias, "bias"));
      KILN_RETURN_IF_ERROR(check_attention_bias(b, q, "bias"));
      KILN_RETURN_IF_ERROR(set_attention_bias(b, "bias", p));
    }
    if (p.B * H * (p.L > lse_len ? p.L : lse_len) > 0) KILN_RETURN_IF_ERROR(run_attention(p, dev));

    KILN_ASSIGN_OR_RETURN(OwnedHandle seed, zero_cpu_tensor({}, DType::Int64));
    KILN_ASSIGN_OR_RETURN(OwnedHandle offset, zero_cpu_tensor({}, DType::Int64));
    give(ret0, out);
    give(ret1, lse);
    give(ret2, seed);
    give(ret3, offset);
    if (ret4 != nullptr) *ret4 = max_q_out;
    if (ret5 != nullptr) *ret5 = max_k_out;
    return Error::Ok;
  });
}

}  // extern "C"
