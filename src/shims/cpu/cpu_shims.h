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

// ---- linalg group: LAPACK-backed solves and factorizations, lu_unpack, float8 and 4-bit matmuls.
/// aten::cholesky_inverse: inverse of A from its Cholesky factor (batched); *ret0 is a new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cholesky_inverse(AtenTensorHandle self, int32_t upper,
                                                                AtenTensorHandle* ret0);
/// aten::cholesky_solve: X with A X = self, input2 = A's Cholesky factor (batched, broadcast).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cholesky_solve(AtenTensorHandle self, AtenTensorHandle input2,
                                                              int32_t upper, AtenTensorHandle* ret0);
/// aten::geqrf: QR as Householder reflectors (ret0, batched column-major) and their scalars (ret1).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_geqrf(AtenTensorHandle self, AtenTensorHandle* ret0,
                                                     AtenTensorHandle* ret1);
/// aten::ormqr: input3 multiplied by the Q of geqrf's (self, input2 = tau), left or right, transposed or not.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_ormqr(AtenTensorHandle self, AtenTensorHandle input2,
                                                     AtenTensorHandle input3, int32_t left, int32_t transpose,
                                                     AtenTensorHandle* ret0);
/// aten::triangular_solve: (solution of op(A) X = self, clone of A), batched and broadcast.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_triangular_solve(AtenTensorHandle self, AtenTensorHandle A,
                                                                int32_t upper, int32_t transpose,
                                                                int32_t unitriangular, AtenTensorHandle* ret0,
                                                                AtenTensorHandle* ret1);
/// aten::lu_unpack: (P, L, U) from linalg.lu_factor's packed LU and int32 pivots.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_lu_unpack(AtenTensorHandle LU_data, AtenTensorHandle LU_pivots,
                                                         int32_t unpack_data, int32_t unpack_pivots,
                                                         AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                         AtenTensorHandle* ret2);
/// aten::_dyn_quant_pack_4bit_weight: ATen's x86 packed format (float32 weight bytes, scales, bias).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__dyn_quant_pack_4bit_weight(AtenTensorHandle weights,
                                                                           AtenTensorHandle scales_zeros,
                                                                           AtenTensorHandle* bias, int64_t block_size,
                                                                           int64_t in_features, int64_t out_features,
                                                                           AtenTensorHandle* ret0);
/// aten::_dyn_quant_matmul_4bit: inp [M, K] float32 times the packed 4-bit weight, int8 dynamic activations.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__dyn_quant_matmul_4bit(AtenTensorHandle inp,
                                                                      AtenTensorHandle packed_weights,
                                                                      int64_t block_size, int64_t in_features,
                                                                      int64_t out_features, AtenTensorHandle* ret0);
/// aten::_scaled_mm: float8 self @ mat2 with per-tensor scales, optional bias; *ret0 is a new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                          AtenTensorHandle scale_a, AtenTensorHandle scale_b,
                                                          AtenTensorHandle* bias, AtenTensorHandle* scale_result,
                                                          int32_t* out_dtype, int32_t use_fast_accum,
                                                          AtenTensorHandle* ret0);
/// aten::_scaled_mm.out: as _scaled_mm, into out ([M, N], any strides).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                              AtenTensorHandle mat2, AtenTensorHandle scale_a,
                                                              AtenTensorHandle scale_b, AtenTensorHandle* bias,
                                                              AtenTensorHandle* scale_result, int32_t* out_dtype,
                                                              int32_t use_fast_accum);

}  // extern "C"
