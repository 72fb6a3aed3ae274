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

// ---- complex group: FFT, complex views, elementwise arithmetic, views, padding, resizing.
/// n-dimensional real-to-complex DFT over dim (onesided halves the last); new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fft_r2c(AtenTensorHandle self, const int64_t* dim,
                                                        int64_t dim_len_, int64_t normalization,
                                                        int32_t onesided, AtenTensorHandle* ret0);
/// n-dimensional complex DFT over dim, forward or inverse; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fft_c2c(AtenTensorHandle self, const int64_t* dim,
                                                        int64_t dim_len_, int64_t normalization,
                                                        int32_t forward, AtenTensorHandle* ret0);
/// complex tensor seen as (real, imag) pairs: a view sharing self's storage.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0);
/// float pairs (last dim 2) seen as complex: a view sharing self's storage.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0);
/// |self|; complex gives the real dtype.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_abs(AtenTensorHandle self, AtenTensorHandle* ret0);
/// argument of each element; complex gives the real dtype, integers float32.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_angle(AtenTensorHandle self, AtenTensorHandle* ret0);
/// abs * exp(i angle) from float32/float64 tensors, broadcast.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_polar(AtenTensorHandle abs, AtenTensorHandle angle,
                                                     AtenTensorHandle* ret0);
/// self + alpha * other (double Scalar promotion).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_add_Scalar(AtenTensorHandle self, double other, double alpha,
                                                          AtenTensorHandle* ret0);
/// self + alpha * other, broadcast, ATen type promotion.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_add_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                          double alpha, AtenTensorHandle* ret0);
/// self * other (double Scalar promotion).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mul_Scalar(AtenTensorHandle self, double other,
                                                          AtenTensorHandle* ret0);
/// self * other, broadcast, ATen type promotion.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                          AtenTensorHandle* ret0);
/// self (a double) ** exponent.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pow_Scalar(double self, AtenTensorHandle exponent,
                                                          AtenTensorHandle* ret0);
/// self ** exponent (a double).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pow_Tensor_Scalar(AtenTensorHandle self, double exponent,
                                                                 AtenTensorHandle* ret0);
/// self ** exponent, broadcast.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pow_Tensor_Tensor(AtenTensorHandle self,
                                                                 AtenTensorHandle exponent,
                                                                 AtenTensorHandle* ret0);
/// greatest common divisor of integer tensors, broadcast.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_gcd(AtenTensorHandle self, AtenTensorHandle other,
                                                   AtenTensorHandle* ret0);
/// periodic Hann window of window_length points.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_hann_window(int64_t window_length, int32_t* dtype,
                                                           int32_t* layout, int32_t* device,
                                                           int32_t device_index_, int32_t* pin_memory,
                                                           AtenTensorHandle* ret0);
/// sets every element of self to value (in place).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fill__Scalar(AtenTensorHandle self, double value);
/// view of [start, start + length) along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_narrow(AtenTensorHandle self, int64_t dim, int64_t start,
                                                      int64_t length, AtenTensorHandle* ret0);
/// view with dimensions reordered.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_permute(AtenTensorHandle self, const int64_t* dims,
                                                       int64_t dims_len_, AtenTensorHandle* ret0);
/// self with a new shape: a view when ATen's would be, else a contiguous copy.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_reshape(AtenTensorHandle self, const int64_t* shape,
                                                       int64_t shape_len_, AtenTensorHandle* ret0);
/// view of start:end:step along dim.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_slice_Tensor(AtenTensorHandle self, int64_t dim,
                                                            int64_t* start, int64_t* end, int64_t step,
                                                            AtenTensorHandle* ret0);
/// view without dim when its size is 1.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_squeeze_dim(AtenTensorHandle self, int64_t dim,
                                                           AtenTensorHandle* ret0);
/// the same bytes seen as another dtype (a view).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_dtype(AtenTensorHandle self, int32_t dtype,
                                                          AtenTensorHandle* ret0);
/// constant/reflect/replicate/circular padding of the last dimensions.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pad(AtenTensorHandle self, const int64_t* pad,
                                                   int64_t pad_len_, const char* mode, double* value,
                                                   AtenTensorHandle* ret0);
/// resizes self in place (see resize.cpp for shared storage).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_resize_(AtenTensorHandle self, const int64_t* size,
                                                       int64_t size_len_, int32_t* memory_format);
/// resizes self to the_template's sizes in place.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_resize_as_(AtenTensorHandle self,
                                                          AtenTensorHandle the_template,
                                                          int32_t* memory_format);
/// makes self a view of source's storage and geometry.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_set__source_Tensor(AtenTensorHandle self,
                                                                  AtenTensorHandle source);
/// zeros of the given size (an ordinary zero-filled tensor).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__efficientzerotensor(const int64_t* size, int64_t size_len_,
                                                                    int32_t* dtype, int32_t* layout,
                                                                    int32_t* device, int32_t device_index_,
                                                                    int32_t* pin_memory,
                                                                    AtenTensorHandle* ret0);

}  // extern "C"
