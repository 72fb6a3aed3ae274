// The SDPA fallbacks AOTInductor emits for CUDA (flash, memory-efficient and
// cuDNN variants), all on Kiln's own attention kernel. Each returns exactly
// the outputs its ATen signature has, with the shapes, dtypes and strides of
// ATen's meta functions (the layouts the compiled model was generated
// against); the random-number outputs are zero, since dropout must be 0.
#include <cmath>
#include <string>
#include <vector>

#include "shims/common/shim_util.h"
#include "devices/cuda/cuda_check.h"
#include "shims/cuda/cuda_shims.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/kernels/attention_kernel.h"
#include "shims/cuda/attention_util.h"
#include "shims/cuda/tensor_ref.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

struct Sdpa {
  TensorRef q, k, v;
  bool has_bias = false;
  TensorRef bias;
  int64_t B = 0, Hq = 0, Hk = 0, L = 0, S = 0, E = 0, Ev = 0;
  float scale = 1.0f;
};

Error read_sdpa(AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
                double dropout_p, double* scale, Sdpa& s) {
  if (dropout_p != 0.0)
    return set_error(Error::NotSupported, "dropout_p must be 0 for inference (got " + std::to_string(dropout_p) + ")");
  KILN_ASSIGN_OR_RETURN(s.q, read_tensor(query, "query"));
  KILN_ASSIGN_OR_RETURN(s.k, read_tensor(key, "key"));
  KILN_ASSIGN_OR_RETURN(s.v, read_tensor(value, "value"));
  if (s.q.dim() != 4 || s.k.dim() != 4 || s.v.dim() != 4)
    return set_error(Error::InvalidArgument, "query/key/value must be 4-D [batch, heads, seq, dim]; got " +
                                                 s.q.describe() + ", " + s.k.describe() + ", " + s.v.describe());
  if (s.k.dtype != s.q.dtype || s.v.dtype != s.q.dtype)
    return set_error(Error::InvalidArgument, "query, key and value must share a dtype");
  if (s.k.device_index != s.q.device_index || s.v.device_index != s.q.device_index)
    return set_error(Error::InvalidArgument, "query, key and value must be on the same CUDA device");
  s.B = s.q.sizes[0];
  s.Hq = s.q.sizes[1];
  s.L = s.q.sizes[2];
  s.E = s.q.sizes[3];
  s.Hk = s.k.sizes[1];
  s.S = s.k.sizes[2];
  s.Ev = s.v.sizes[3];
  if (s.k.sizes[0] != s.B || s.v.sizes[0] != s.B || s.k.sizes[3] != s.E || s.v.sizes[1] != s.Hk ||
      s.v.sizes[2] != s.S || (s.Hk > 0 && s.Hq % s.Hk != 0) || (s.Hk == 0 && s.Hq != 0))
    return set_error(Error::InvalidArgument, "incompatible query " + s.q.describe() + ", key " + s.k.describe() +
                                                 ", value " + s.v.describe());
  s.scale = scale != nullptr ? static_cast<float>(*scale)
                             : (s.E > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.E))) : 1.0f);
  if (attn_bias != nullptr && *attn_bias != nullptr) {
    KILN_ASSIGN_OR_RETURN(s.bias, read_tensor(*attn_bias, "attn_bias"));
    KILN_RETURN_IF_ERROR(check_attention_bias(s.bias, s.q, "attn_bias"));
    s.has_bias = true;
  }
  return Error::Ok;
}

// Runs the kernel into `out` (and `lse` when non-null, with lse strides).
Error run_sdpa(const Sdpa& s, bool causal, const TensorRef& out, float* lse, const int64_t lse_strides[3]) {
  AttentionParams p;
  p.q = s.q.data;
  p.k = s.k.data;
  p.v = s.v.data;
  p.out = out.data;
  p.lse = lse;
  p.dtype = s.q.dtype;
  p.B = s.B;
  p.Hq = s.Hq;
  p.Hk = s.Hk;
  p.L = s.L;
  p.S = s.S;
  p.E = s.E;
  p.Ev = s.Ev;
  p.scale = s.scale;
  p.causal = causal;
  for (int d = 0; d < 4; ++d) {
    p.q_strides[d] = s.q.strides[d];
    p.k_strides[d] = s.k.strides[d];
    p.v_strides[d] = s.v.strides[d];
    p.out_strides[d] = out.strides[d];
  }
  for (int d = 0; d < 3; ++d) p.lse_strides[d] = lse_strides ? lse_strides[d] : 0;
  if (s.has_bias) KILN_RETURN_IF_ERROR(set_attention_bias(s.bias, "attn_bias", p));
  return run_attention(p, s.q.device_index);
}

void give(AtenTensorHandle* ret, OwnedHandle& h) {
  if (ret != nullptr) *ret = h.release();
}

// The nine results of ATen's flash and cuDNN attention, given to the caller
// once everything is made: output, logsumexp, cum_seq_q / cum_seq_k
// (undefined: no nested tensors), max_q / max_k, philox seed and offset,
// debug mask (their shapes differ between the two ops).
struct FlashStyleResults {
  OwnedHandle out, lse, seed, offset, debug;
};

Error give_flash_style(const Sdpa& s, FlashStyleResults& r, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                       AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5,
                       AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  KILN_ASSIGN_OR_RETURN(OwnedHandle cum_q, new_undefined_tensor());
  KILN_ASSIGN_OR_RETURN(OwnedHandle cum_k, new_undefined_tensor());
  give(ret0, r.out);
  give(ret1, r.lse);
  give(ret2, cum_q);
  give(ret3, cum_k);
  if (ret4) *ret4 = s.L;
  if (ret5) *ret5 = s.S;
  give(ret6, r.seed);
  give(ret7, r.offset);
  give(ret8, r.debug);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8) {
  return aoti::guarded("aoti_torch_cuda__scaled_dot_product_flash_attention", [&]() -> Error {
    if (return_debug_mask != 0)
      return set_error(Error::NotSupported, "return_debug_mask is only meaningful with dropout, which Kiln does not run");
    Sdpa s;
    KILN_RETURN_IF_ERROR(read_sdpa(query, key, value, nullptr, dropout_p, scale, s));
    // ATen's flash kernel aligns a causal mask of a non-square score matrix to
    // the bottom right, Kiln's kernels to the top left (torch's is_causal).
    // torch's SDPA never picks the flash kernel for that case, so a model
    // cannot reach it; a direct call is refused rather than answered wrongly.
    if (is_causal != 0 && s.L != s.S)
      return set_error(Error::NotSupported,
                       "is_causal with query length " + std::to_string(s.L) + " != key length " + std::to_string(s.S) +
                           ": ATen's flash kernel aligns that mask to the bottom right, which Kiln does not implement "
                           "(torch's scaled_dot_product_attention never selects the flash kernel for it)");
    const int dev = s.q.device_index;
    const std::vector<int64_t> out_shape = {s.B, s.Hq, s.L, s.Ev};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_cuda_tensor(out_shape, attention_like_query(s.q, out_shape), s.q.dtype, dev));
    const std::vector<int64_t> lse_shape = {s.B, s.Hq, s.L};
    const auto lse_strides = contiguous_strides(lse_shape);
    KILN_ASSIGN_OR_RETURN(OwnedHandle lse, new_cuda_tensor(lse_shape, lse_strides, DType::Float32, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef out_ref, read_tensor(out.get(), "output"));
    KILN_ASSIGN_OR_RETURN(TensorRef lse_ref, read_tensor(lse.get(), "logsumexp"));
    KILN_RETURN_IF_ERROR(run_sdpa(s, is_causal != 0, out_ref, static_cast<float*>(lse_ref.data), lse_strides.data()));
    // The remaining outputs, in ATen's meta shapes: philox seed (uint64[2])
    // and offset (uint64[]) zero, debug mask empty.
    FlashStyleResults r{std::move(out), std::move(lse), {}, {}, {}};
    KILN_ASSIGN_OR_RETURN(r.seed, zero_cpu_tensor({2}, DType::UInt64));
    KILN_ASSIGN_OR_RETURN(r.offset, zero_cpu_tensor({}, DType::UInt64));
    KILN_ASSIGN_OR_RETURN(r.debug, new_cuda_tensor({0}, {1}, s.q.dtype, dev));
    return give_flash_style(s, r, ret0, ret1, ret2, ret3, ret4, ret5, ret6, ret7, ret8);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  return aoti::guarded("aoti_torch_cuda__scaled_dot_product_efficient_attention", [&]() -> Error {
    Sdpa s;
    KILN_RETURN_IF_ERROR(read_sdpa(query, key, value, attn_bias, dropout_p, scale, s));
    const int dev = s.q.device_index;
    // ATen allocates [B, L, H, Ev] and returns it transposed to [B, H, L, Ev].
    const std::vector<int64_t> out_shape = {s.B, s.Hq, s.L, s.Ev};
    const std::vector<int64_t> out_strides = {s.L * s.Hq * s.Ev, s.Ev, s.Hq * s.Ev, 1};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_cuda_tensor(out_shape, out_strides, s.q.dtype, dev));
    // logsumexp rows are padded to a multiple of 32 (empty without compute_log_sumexp).
    const int64_t lse_len = compute_log_sumexp ? (s.L + 31) / 32 * 32 : 0;
    const std::vector<int64_t> lse_shape = {s.B, s.Hq, lse_len};
    const auto lse_strides = contiguous_strides(lse_shape);
    KILN_ASSIGN_OR_RETURN(OwnedHandle lse, new_cuda_tensor(lse_shape, lse_strides, DType::Float32, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef out_ref, read_tensor(out.get(), "output"));
    float* lse_ptr = nullptr;
    if (compute_log_sumexp && s.B * s.Hq * lse_len > 0) {
      KILN_ASSIGN_OR_RETURN(TensorRef lse_ref, read_tensor(lse.get(), "logsumexp"));
      lse_ptr = static_cast<float*>(lse_ref.data);
      if (lse_len != s.L) {  // define the padding (never read by ATen's consumers, but not garbage)
        ScopedDevice scoped(dev);
        KILN_RETURN_IF_ERROR(scoped.status());
        KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(lse_ptr, 0, sizeof(float) * static_cast<size_t>(s.B * s.Hq * lse_len),
                                                  current_stream(dev)));
      }
    }
    KILN_RETURN_IF_ERROR(run_sdpa(s, is_causal != 0, out_ref, lse_ptr, lse_strides.data()));
    KILN_ASSIGN_OR_RETURN(OwnedHandle seed, zero_cpu_tensor({}, DType::Int64));
    KILN_ASSIGN_OR_RETURN(OwnedHandle offset, zero_cpu_tensor({}, DType::Int64));
    give(ret0, out);
    give(ret1, lse);
    give(ret2, seed);
    give(ret3, offset);
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  return aoti::guarded("aoti_torch_cuda__scaled_dot_product_cudnn_attention", [&]() -> Error {
    if (return_debug_mask != 0)
      return set_error(Error::NotSupported, "return_debug_mask is only meaningful with dropout, which Kiln does not run");
    Sdpa s;
    KILN_RETURN_IF_ERROR(read_sdpa(query, key, value, attn_bias, dropout_p, scale, s));
    const int dev = s.q.device_index;
    const std::vector<int64_t> out_shape = {s.B, s.Hq, s.L, s.Ev};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_cuda_tensor(out_shape, attention_like_query(s.q, out_shape), s.q.dtype, dev));
    // ATen's meta allocates logsumexp [B, H, L, 1] whether or not it is asked for.
    const std::vector<int64_t> lse_shape = {s.B, s.Hq, s.L, 1};
    const auto lse_full_strides = contiguous_strides(lse_shape);
    KILN_ASSIGN_OR_RETURN(OwnedHandle lse, new_cuda_tensor(lse_shape, lse_full_strides, DType::Float32, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef out_ref, read_tensor(out.get(), "output"));
    KILN_ASSIGN_OR_RETURN(TensorRef lse_ref, read_tensor(lse.get(), "logsumexp"));
    const int64_t lse_strides[3] = {lse_full_strides[0], lse_full_strides[1], lse_full_strides[2]};
    (void)compute_log_sumexp;  // always computed: it costs one store per row
    KILN_RETURN_IF_ERROR(run_sdpa(s, is_causal != 0, out_ref, static_cast<float*>(lse_ref.data), lse_strides));
    FlashStyleResults r{std::move(out), std::move(lse), {}, {}, {}};
    KILN_ASSIGN_OR_RETURN(r.seed, zero_cpu_tensor({}, DType::Int64));
    KILN_ASSIGN_OR_RETURN(r.offset, zero_cpu_tensor({}, DType::Int64));
    KILN_ASSIGN_OR_RETURN(r.debug, new_undefined_tensor());
    return give_flash_style(s, r, ret0, ret1, ret2, ret3, ret4, ret5, ret6, ret7, ret8);
  });
}

}  // extern "C"
