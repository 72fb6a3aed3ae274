// aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu: softmax(q k^T *
// scale + mask) v per (batch, head), with the per-row logsumexp that ATen's
// CPU flash kernel also returns. Computed in float32 (bf16/fp16 inputs are
// widened) with two GEMMs per (batch, head) on an L x S score block.
//
// Semantics follow the ATen op:
//  - q [B, Hq, L, E], k and v [B, Hkv, S, E]; Hkv may divide Hq (grouped-query
//    attention: query head h reads key/value head h / (Hq / Hkv)).
//  - dropout_p must be 0 (inference); is_causal masks j > i (top-left aligned).
//  - attn_mask broadcasts to [B, Hq, L, S]: float masks are added to the
//    scores, bool masks keep positions where true.
//  - scale defaults to 1/sqrt(E).
//  - output has q's shape and, like empty_like(q), q's strides when q is dense;
//    logsumexp is float32 [B, Hq, L] laid out as [B, L, Hq] transposed.
//  - rows with every position masked produce output 0 and logsumexp -inf.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "aoti/shim/layout_util.h"
#include "devices/cpu/ops/float_io.h"
#include "devices/cpu/ops/gemm.h"
#include "devices/cpu/ops/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

// Mask element strides broadcast to [B, H, L, S] (0 where broadcast).
Result<std::array<int64_t, 4>> mask_strides(const Tensor& mask, const std::array<int64_t, 4>& full) {
  if (mask.dim() < 1 || mask.dim() > 4)
    return invalid("attn_mask must have 1 to 4 dims, got " + mask.describe());
  std::array<int64_t, 4> st{0, 0, 0, 0};
  const size_t lead = 4 - mask.sizes().size();
  for (size_t i = 0; i < mask.sizes().size(); ++i) {
    const int64_t ms = mask.sizes()[i], fs = full[lead + i];
    if (ms == fs) {
      st[lead + i] = mask.strides()[i];
    } else if (ms != 1) {
      return invalid("attn_mask " + shape_string(mask.sizes()) + " does not broadcast to " + shape_string(full));
    }
  }
  return st;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return guarded("aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(Tensor * q, cpu_tensor_arg(query, "query"));
    KILN_ASSIGN_OR_RETURN(Tensor * k, cpu_tensor_arg(key, "key"));
    KILN_ASSIGN_OR_RETURN(Tensor * v, cpu_tensor_arg(value, "value"));
    if (dropout_p != 0.0) return invalid("dropout_p must be 0 for inference, got " + std::to_string(dropout_p));
    if (q->dim() != 4 || k->dim() != 4 || v->dim() != 4)
      return invalid("query, key and value must be 4-d [B, H, L, E], got " + q->describe() + ", " + k->describe() +
                     ", " + v->describe());
    if (!is_float_dtype(q->dtype()))
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(q->dtype()) + " is not supported");
    KILN_RETURN_IF_ERROR(same_dtype(*k, q->dtype(), "key"));
    KILN_RETURN_IF_ERROR(same_dtype(*v, q->dtype(), "value"));
    const int64_t B = q->size(0), H = q->size(1), L = q->size(2), E = q->size(3);
    const int64_t Hkv = k->size(1), S = k->size(2);
    if (k->size(0) != B || v->size(0) != B || v->size(1) != Hkv || v->size(2) != S)
      return invalid("key " + shape_string(k->sizes()) + " and value " + shape_string(v->sizes()) +
                     " do not match query " + shape_string(q->sizes()));
    if (k->size(3) != E || v->size(3) != E)
      return invalid("query, key and value must have the same head size, got " + std::to_string(E) + ", " +
                     std::to_string(k->size(3)) + ", " + std::to_string(v->size(3)));
    if (Hkv < 1 || H % Hkv != 0)
      return invalid("key/value heads " + std::to_string(Hkv) + " do not divide query heads " + std::to_string(H));

    const Tensor* mask = nullptr;
    std::array<int64_t, 4> mst{};
    if (attn_mask != nullptr && *attn_mask != nullptr) {
      KILN_ASSIGN_OR_RETURN(mask, cpu_tensor_arg(*attn_mask, "attn_mask"));
      if (mask->dtype() != DType::Bool && !is_float_dtype(mask->dtype()))
        return invalid(std::string("attn_mask dtype ") + dtype_name(mask->dtype()) + " is not bool or floating");
      KILN_ASSIGN_OR_RETURN(mst, mask_strides(*mask, {B, H, L, S}));
    }
    const float sc = scale ? static_cast<float>(*scale) : static_cast<float>(1.0 / std::sqrt(static_cast<double>(E)));

    const auto out_strides = strides_like(q->sizes(), q->strides());
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(q->sizes(), out_strides, q->dtype(), Device{}));
    const std::vector<int64_t> lse_sizes{B, H, L};
    const std::vector<int64_t> lse_strides{L * H, 1, H};
    KILN_ASSIGN_OR_RETURN(Tensor lse, Tensor::empty_strided(lse_sizes, lse_strides, DType::Float32, Device{}));

    std::vector<float> qs, ks, vs;
    const float* qf = contiguous_floats(*q, qs);
    const float* kf = contiguous_floats(*k, ks);
    const float* vf = contiguous_floats(*v, vs);
    // The mask is read in place through its broadcast strides.
    const char* mbase = mask ? static_cast<const char*>(mask->data_ptr()) : nullptr;
    const auto melem = mask ? static_cast<int64_t>(element_size(mask->dtype())) : 0;
    std::vector<float> o(static_cast<size_t>(B * H * L * E));
    std::vector<float> scores(static_cast<size_t>(L * S));
    const float neg_inf = -std::numeric_limits<float>::infinity();
    float* lse_data = lse.data<float>();
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        const int64_t hk = h / (H / Hkv);
        const float* qbh = qf + ((b * H + h) * L) * E;
        const float* kbh = kf + ((b * Hkv + hk) * S) * E;
        const float* vbh = vf + ((b * Hkv + hk) * S) * E;
        float* obh = o.data() + ((b * H + h) * L) * E;
        // scores = scale * q @ k^T
        KILN_RETURN_IF_ERROR(gemm<float>({qbh, L, E, E, 1}, {kbh, E, S, 1, E}, {scores.data(), L, S, S, 1}, sc, 0.0f));
        for (int64_t i = 0; i < L; ++i) {
          float* row = scores.data() + i * S;
          if (mask) {
            const char* mrow = mbase + (b * mst[0] + h * mst[1] + i * mst[2]) * melem;
            for (int64_t j = 0; j < S; ++j) {
              const char* p = mrow + j * mst[3] * melem;
              if (mask->dtype() == DType::Bool) {
                if (*reinterpret_cast<const uint8_t*>(p) == 0) row[j] = neg_inf;
              } else {
                row[j] += read_float(p, mask->dtype());
              }
            }
          }
          if (is_causal)
            for (int64_t j = i + 1; j < S; ++j) row[j] = neg_inf;
          float mx = neg_inf;
          for (int64_t j = 0; j < S; ++j) mx = std::max(mx, row[j]);
          float* lse_out = lse_data + b * L * H + i * H + h;
          if (mx == neg_inf) {
            // Every position masked: no probability mass anywhere.
            for (int64_t j = 0; j < S; ++j) row[j] = 0.0f;
            *lse_out = neg_inf;
            continue;
          }
          double sum = 0.0;
          for (int64_t j = 0; j < S; ++j) {
            row[j] = std::exp(row[j] - mx);
            sum += row[j];
          }
          const float inv = static_cast<float>(1.0 / sum);
          for (int64_t j = 0; j < S; ++j) row[j] *= inv;
          *lse_out = mx + static_cast<float>(std::log(sum));
        }
        // out = P @ v
        KILN_RETURN_IF_ERROR(gemm<float>({scores.data(), L, S, S, 1}, {vbh, S, E, E, 1}, {obh, L, E, E, 1}, 1.0f, 0.0f));
      }
    }
    store_floats(o.data(), out);
    AtenTensorHandle h0 = new_handle(std::move(out));
    AtenTensorHandle h1 = h0 ? new_handle(std::move(lse)) : nullptr;
    if (h1 == nullptr) {
      delete_handle(h0);
      return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
    }
    *ret0 = h0;
    *ret1 = h1;
    return Error::Ok;
  });
}

}  // extern "C"
