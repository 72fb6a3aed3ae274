// The CPU fallback ops: aoti_torch_cpu_<op> functions a model library calls
// for ATen ops AOTInductor does not generate code for. One file per op (or
// family of overloads) in this directory, named after it; every name is listed
// in shims.txt beside them and has cases in tests/ops. Signatures are torch's
// generated c_shim_cpu.h's; semantics are the ATen op's. Conventions: shim_abi.h.
#pragma once

#include "shims/common/shim_abi.h"

extern "C" {

/// out = self @ mat2 (2-D). out is preallocated with the result shape.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                      AtenTensorHandle mat2);
/// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out's shape.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                         double alpha);
/// out[b] = self[b] @ mat2[b] (3-D).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2);
/// Kiln's fused op kiln::rms_norm_linear (python/kiln/exporter/kiln_ops.py):
/// *ret0 = linear(rms_norm(x) * (norm_weight + weight_offset), weight), the norm in
/// float32 and rounded to x's dtype; x [..., K], norm_weight [K], weight [N, K].
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rms_norm_linear(AtenTensorHandle x, AtenTensorHandle norm_weight,
                                                               AtenTensorHandle weight, double eps,
                                                               double weight_offset, AtenTensorHandle* ret0);
/// aten::convolution (1-3 spatial dims, batched input); bias may be null; *ret0 is a new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
    int64_t groups, AtenTensorHandle* ret0);
/// aten::_scaled_dot_product_flash_attention_for_cpu: ret0 = attention output
/// (query's layout), ret1 = logsumexp [B, H, L] float32. attn_mask and scale
/// may be null. New references.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    AtenTensorHandle* attn_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

/// Running sum / product along dim; dtype (nullable) is the result dtype.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                      AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                       AtenTensorHandle* ret0);

// Indexing group: selection, scatter/gather-like reductions, concatenation, embedding bags.
/// Coordinates of self's nonzero elements: int64 [n, ndim] with strides (1, n).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_nonzero(AtenTensorHandle self, AtenTensorHandle* ret0);
/// nonzero padded with fill_value (or truncated) to `size` rows; contiguous.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_nonzero_static(AtenTensorHandle self, int64_t size, int64_t fill_value,
                                                              AtenTensorHandle* ret0);
/// 1-d tensor of self's elements where the (broadcast) bool mask is true.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_masked_select(AtenTensorHandle self, AtenTensorHandle mask,
                                                             AtenTensorHandle* ret0);
/// self (broadcast with mask) with masked elements taken from source in order.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_masked_scatter(AtenTensorHandle self, AtenTensorHandle mask,
                                                              AtenTensorHandle source, AtenTensorHandle* ret0);
/// self[indices] (advanced indexing; a null entry is a full slice).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_Tensor(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                            int64_t indices_len_, AtenTensorHandle* ret0);
/// A copy of self with self[indices] set to (or, with accumulate, incremented by) values.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_put(AtenTensorHandle self, const AtenTensorHandle** indices,
                                                         int64_t indices_len_, AtenTensorHandle values,
                                                         int32_t accumulate, AtenTensorHandle* ret0);
/// A copy of self with slices index[i] along dim reduced (prod/mean/amax/amin) with source's slice i.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_reduce(AtenTensorHandle self, int64_t dim,
                                                            AtenTensorHandle index, AtenTensorHandle source,
                                                            const char* reduce, int32_t include_self,
                                                            AtenTensorHandle* ret0);
/// out = self with out[..index[c]..] = src[c] along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self,
                                                               int64_t dim, AtenTensorHandle index,
                                                               AtenTensorHandle src);
/// out = self with out[..index[c]..] = value along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                 int64_t dim, AtenTensorHandle index, double value);
/// out = self with src reduced (sum/prod/mean/amax/amin) into out[..index[c]..] along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                      int64_t dim, AtenTensorHandle index,
                                                                      AtenTensorHandle src, const char* reduce,
                                                                      int32_t include_self);
/// arange(len(repeats)) with element i repeated repeats[i] times; output_size (nullable) must match.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_repeat_interleave_Tensor(AtenTensorHandle repeats,
                                                                        int64_t* output_size, AtenTensorHandle* ret0);
/// Tensors concatenated along dim, dtypes promoted.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim,
                                                   AtenTensorHandle* ret0);
/// Bagged embedding sum/mean/max: output, offset2bag, bag_size, max_indices.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__embedding_bag(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3);
/// As _embedding_bag (the inference entry point nn.EmbeddingBag calls).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__embedding_bag_forward_only(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3);
/// Reduction of consecutive segments (lengths or offsets) of data along axis.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_segment_reduce(AtenTensorHandle data, const char* reduce,
                                                              AtenTensorHandle* lengths, AtenTensorHandle* indices,
                                                              AtenTensorHandle* offsets, int64_t axis, int32_t unsafe,
                                                              double* initial, AtenTensorHandle* ret0);

}  // extern "C"
