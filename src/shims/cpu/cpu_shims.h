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

// ---- Random ops (random.cpp): draw from the calling method's seed (aoti.seed).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rand(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_rand_generator(const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randn(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randn_generator(const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint(int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_generator(int64_t high, const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_low(int64_t low, int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high, const int64_t* size, int64_t size_len_);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_randperm(int64_t n, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_uniform(AtenTensorHandle self, double from, double to, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_normal_functional(AtenTensorHandle self, double mean, double std, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_exponential(AtenTensorHandle self, double lambd, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bernoulli__float(AtenTensorHandle self, double p, AtenGeneratorHandle* generator);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bernoulli__Tensor(AtenTensorHandle self, AtenTensorHandle p, AtenGeneratorHandle* generator);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_native_dropout(AtenTensorHandle input, double p, int32_t* train, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
// Sorting, selection, ordered scans, searching and histograms (group "sort").
/// log(cumsum(exp(self))) along dim; floating and complex.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_logcumsumexp(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0);
/// Running max along dim and the last position it was reached at (int64).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cummax(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
                                                      AtenTensorHandle* ret1);
/// Running min along dim and the last position it was reached at (int64).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cummin(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
                                                      AtenTensorHandle* ret1);
/// Sorted lines along dim (NaN largest) and their source positions; stable.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// aten::sort.stable; stable (nullable) is honoured by always sorting stably.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                           int32_t descending, AtenTensorHandle* ret0,
                                                           AtenTensorHandle* ret1);
/// The k largest (smallest) elements along dim, sorted, and their positions.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                                    int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// The k-th smallest (1-based) element along dim and its position.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_kthvalue(AtenTensorHandle self, int64_t k, int64_t dim,
                                                        int32_t keepdim, AtenTensorHandle* ret0,
                                                        AtenTensorHandle* ret1);
/// Lower median of all elements as a 0-d tensor; NaN if any is NaN.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_median(AtenTensorHandle self, AtenTensorHandle* ret0);
/// Lower median of all non-NaN elements as a 0-d tensor.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_nanmedian(AtenTensorHandle self, AtenTensorHandle* ret0);
/// Most frequent value along dim (smallest on ties) and its last position.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mode(AtenTensorHandle self, int64_t dim, int32_t keepdim,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Insertion positions of self's values in sorted_sequence's lines; side and sorter nullable.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_searchsorted_Tensor(AtenTensorHandle sorted_sequence,
                                                                   AtenTensorHandle self, int32_t out_int32,
                                                                   int32_t right, const char** side,
                                                                   AtenTensorHandle* sorter, AtenTensorHandle* ret0);
/// Insertion position of one value in 1-D sorted_sequence, as a 0-d tensor.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_searchsorted_Scalar(AtenTensorHandle sorted_sequence, double self,
                                                                   int32_t out_int32, int32_t right,
                                                                   const char** side, AtenTensorHandle* sorter,
                                                                   AtenTensorHandle* ret0);
/// Bucket of each element of self among 1-D boundaries.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bucketize_Tensor(AtenTensorHandle self, AtenTensorHandle boundaries,
                                                                int32_t out_int32, int32_t right,
                                                                AtenTensorHandle* ret0);
/// Histogram of all elements in `bins` equal bins over [min, max] (data range when equal).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_histc(AtenTensorHandle self, int64_t bins, double min, double max,
                                                     AtenTensorHandle* ret0);
/// aten::histogram.bin_ct: counts (or weights, density) and the bins + 1 edges.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_histogram_bin_ct(AtenTensorHandle self, int64_t bins,
                                                                const double** range, int64_t range_len_,
                                                                AtenTensorHandle* weight, int32_t density,
                                                                AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// aten::_histogramdd_from_bin_cts: the D-dimensional histogram of self's (..., D) points.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__histogramdd_from_bin_cts(AtenTensorHandle self, const int64_t* bins,
                                                                         int64_t bins_len_, const double** range,
                                                                         int64_t range_len_, AtenTensorHandle* weight,
                                                                         int32_t density, AtenTensorHandle* ret0);

}  // extern "C"
