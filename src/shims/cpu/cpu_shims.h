// The CPU fallback ops: aoti_torch_cpu_<op> functions a model library calls
// for ATen ops AOTInductor does not generate code for. One file per op (or
// family of overloads) in this directory, named after it; every name is listed
// in shims.txt beside them and has cases in tests/ops. Signatures are torch's
// generated c_shim_cpu.h's; semantics are the ATen op's. Conventions: shim_abi.h.
#pragma once

#include "shims/common/shim_abi.h"
#include "shims/common/views/view_shims.h"

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
/// Kiln's op kiln::grouped_mm (python/kiln/exporter/kiln_ops.py): input [S, K] with rows
/// sorted by group, weight [G, K, N] (any strides), offs [G] int32/int64 the groups'
/// cumulative end rows; *ret0 [S, N] = input[rows of g] @ weight[g] per group, zero past
/// offs[G-1]. offs out of order or past S is an error naming the value.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_grouped_mm(AtenTensorHandle input, AtenTensorHandle weight,
                                                          AtenTensorHandle offs, AtenTensorHandle* ret0);
/// Kiln's op kiln::int8_linear: *ret0 [..., N] = x [..., K] @ W^T, W[n, k] = weight[n, k]
/// (int8) * scales[n, k / group_size] (x's dtype, [N, K / group_size]); float32 sums rounded
/// once. group_size K is _weight_int8pack_mm over x's rows (shims/common/int_mm_args.h).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_int8_linear(AtenTensorHandle x, AtenTensorHandle weight,
                                                           AtenTensorHandle scales, int64_t group_size,
                                                           AtenTensorHandle* ret0);
/// Kiln's op kiln::int4_linear (python/kiln/exporter/kiln_ops.py): x [..., K] float32,
/// bfloat16 or float16 (any strides); qweight uint8 [N, K/2], byte j of row n the 4-bit codes
/// of k = 2j (low nibble) and 2j + 1 (high); scale_zero [N, K/group_size, 2] of a float dtype,
/// w[n, k] = (code - 8) * scale + zero. *ret0 [..., N] (x's dtype, contiguous) = x @ w^T in
/// float32, rounded once. K even, group_size > 0 dividing K.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_int4_linear(AtenTensorHandle x, AtenTensorHandle qweight,
                                                           AtenTensorHandle scale_zero, int64_t group_size,
                                                           AtenTensorHandle* ret0);
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
// Pooling and the products CNNs and recommenders hit (group: pool).
/// Window means over (N,)C,H,W planes; divisor_override may be null; *ret0 is a new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_avg_pool2d(AtenTensorHandle self, const int64_t* kernel_size,
                                                          int64_t kernel_size_len_, const int64_t* stride,
                                                          int64_t stride_len_, const int64_t* padding,
                                                          int64_t padding_len_, int32_t ceil_mode,
                                                          int32_t count_include_pad,
                                                          int64_t* divisor_override, AtenTensorHandle* ret0);
/// Window means over (N,)C,D,H,W planes; divisor_override may be null.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_avg_pool3d(AtenTensorHandle self, const int64_t* kernel_size,
                                                          int64_t kernel_size_len_, const int64_t* stride,
                                                          int64_t stride_len_, const int64_t* padding,
                                                          int64_t padding_len_, int32_t ceil_mode,
                                                          int32_t count_include_pad,
                                                          int64_t* divisor_override, AtenTensorHandle* ret0);
/// Adaptive window means to output_size (2 values).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__adaptive_avg_pool2d(AtenTensorHandle self,
                                                                    const int64_t* output_size,
                                                                    int64_t output_size_len_,
                                                                    AtenTensorHandle* ret0);
/// Adaptive window means to output_size (3 values).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__adaptive_avg_pool3d(AtenTensorHandle self,
                                                                    const int64_t* output_size,
                                                                    int64_t output_size_len_,
                                                                    AtenTensorHandle* ret0);
/// Adaptive window maxima (ret0) and their flat in-plane positions (ret1, int64).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_adaptive_max_pool2d(AtenTensorHandle self,
                                                                   const int64_t* output_size,
                                                                   int64_t output_size_len_,
                                                                   AtenTensorHandle* ret0,
                                                                   AtenTensorHandle* ret1);
/// Adaptive window maxima (ret0) and their flat in-plane positions (ret1, int64).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_adaptive_max_pool3d(AtenTensorHandle self,
                                                                   const int64_t* output_size,
                                                                   int64_t output_size_len_,
                                                                   AtenTensorHandle* ret0,
                                                                   AtenTensorHandle* ret1);
/// Window maxima (ret0) and flat in-plane positions (ret1, int64).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_pool2d_with_indices(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Window maxima (ret0) and flat in-plane positions (ret1, int64).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_pool3d_with_indices(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Scatters self to the flat in-plane positions `indices` of a zero output_size result.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_unpool2d(AtenTensorHandle self, AtenTensorHandle indices,
                                                            const int64_t* output_size,
                                                            int64_t output_size_len_, AtenTensorHandle* ret0);
/// Scatters self to the flat in-plane positions `indices` of a zero output_size result.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_max_unpool3d(AtenTensorHandle self, AtenTensorHandle indices,
                                                            const int64_t* output_size,
                                                            int64_t output_size_len_, const int64_t* stride,
                                                            int64_t stride_len_, const int64_t* padding,
                                                            int64_t padding_len_, AtenTensorHandle* ret0);
/// Fractional max pooling with windows placed by random_samples (N, C, 2); values and int64 positions.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fractional_max_pool2d(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size,
    int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1);
/// Fractional max pooling with windows placed by random_samples (N, C, 3); values and int64 positions.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fractional_max_pool3d(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size,
    int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1);
/// out[b] = beta * self + alpha * (batch1[b] @ batch2[b]); self broadcasts.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                           AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                           double beta, double alpha);
/// *ret0 = beta * self + alpha * sum_b batch1[b] @ batch2[b].
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addbmm(AtenTensorHandle self, AtenTensorHandle batch1,
                                                      AtenTensorHandle batch2, double beta, double alpha,
                                                      AtenTensorHandle* ret0);
/// *ret0 = beta * self + alpha * (mat @ vec).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmv(AtenTensorHandle self, AtenTensorHandle mat,
                                                     AtenTensorHandle vec, double beta, double alpha,
                                                     AtenTensorHandle* ret0);
/// *ret0 = relu (or gelu when use_gelu) of beta * self + alpha * (mat1 @ mat2).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1,
                                                                 AtenTensorHandle mat2, double beta,
                                                                 double alpha, int32_t use_gelu,
                                                                 AtenTensorHandle* ret0);
/// out (int32) = self (int8) @ mat2 (int8).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__int_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                           AtenTensorHandle mat2);
/// *ret0 = (self @ mat2^T) * scales with mat2 int8 [N, K], scales [N].
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__weight_int8pack_mm(AtenTensorHandle self,
                                                                   AtenTensorHandle mat2,
                                                                   AtenTensorHandle scales,
                                                                   AtenTensorHandle* ret0);
/// RMS norm over the trailing normalized_shape dims: ret0 output, ret1 rstd (weight, eps nullable).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fused_rms_norm(
    AtenTensorHandle input, const int64_t* normalized_shape, int64_t normalized_shape_len_,
    AtenTensorHandle* weight, double* eps, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// p-norm distances between the rows of x1 and x2 (batched, broadcast); compute_mode nullable.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__cdist_forward(AtenTensorHandle x1, AtenTensorHandle x2,
                                                              double p, int64_t* compute_mode,
                                                              AtenTensorHandle* ret0);
/// p-norm distances between all pairs of rows of self (upper triangle, row-major).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__pdist_forward(AtenTensorHandle self, double p,
                                                              AtenTensorHandle* ret0);
/// Sum over sumdim of the product of i1, i2, i3 unsqueezed at expand1/2/3.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__trilinear(AtenTensorHandle i1, AtenTensorHandle i2,
                                                          AtenTensorHandle i3, const int64_t* expand1,
                                                          int64_t expand1_len_, const int64_t* expand2,
                                                          int64_t expand2_len_, const int64_t* expand3,
                                                          int64_t expand3_len_, const int64_t* sumdim,
                                                          int64_t sumdim_len_, int64_t unroll_dim,
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
// ---- complex group: FFT, complex views, elementwise arithmetic, views, padding, resizing.
/// n-dimensional real-to-complex DFT over dim (onesided halves the last); new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fft_r2c(AtenTensorHandle self, const int64_t* dim,
                                                        int64_t dim_len_, int64_t normalization,
                                                        int32_t onesided, AtenTensorHandle* ret0);
/// n-dimensional complex DFT over dim, forward or inverse; new reference.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fft_c2c(AtenTensorHandle self, const int64_t* dim,
                                                        int64_t dim_len_, int64_t normalization,
                                                        int32_t forward, AtenTensorHandle* ret0);
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
/// constant/reflect/replicate/circular padding of the last dimensions.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pad(AtenTensorHandle self, const int64_t* pad,
                                                   int64_t pad_len_, const char* mode, double* value,
                                                   AtenTensorHandle* ret0);
/// zeros of the given size (an ordinary zero-filled tensor).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__efficientzerotensor(const int64_t* size, int64_t size_len_,
                                                                    int32_t* dtype, int32_t* layout,
                                                                    int32_t* device, int32_t device_index_,
                                                                    int32_t* pin_memory,
                                                                    AtenTensorHandle* ret0);

/// One layer and direction of an LSTM (aten::mkldnn_rnn_layer, declared in torch's hand-written
/// c/shim_cpu.h): input [T, B, I], W_ih, W_hh, biases (read when has_biases), hx_/cx_ [1, B, H];
/// ret0 output [T, B, H], ret1 hy, ret2 cy, ret3 an empty uint8 workspace. New references.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mkldnn_rnn_layer(
    AtenTensorHandle input, AtenTensorHandle weight0, AtenTensorHandle weight1, AtenTensorHandle weight2,
    AtenTensorHandle weight3, AtenTensorHandle hx_, AtenTensorHandle cx_, int32_t reverse,
    const int64_t* batch_sizes, int64_t batch_sizes_len_, int64_t mode, int64_t hidden_size, int64_t num_layers,
    int32_t has_biases, int32_t bidirectional, int32_t batch_first, int32_t train, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);

}  // extern "C"
