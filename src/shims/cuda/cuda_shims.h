// Kiln's declarations of the CUDA-specific aoti_torch_* shims that
// libkiln_cuda.so defines and exports (made global by dlopen RTLD_GLOBAL, so a
// model library resolves them like the device-neutral ones in libkiln).
// Signatures follow PyTorch 2.11's aoti_torch/c/shim.h (USE_CUDA part) and
// generated/c_shim_cuda.h, written here from their documented contracts.
//
// Conventions are those of aoti/shim/shim_abi.h: 0 success / 1 failure with
// the thread's Kiln error message naming the function and the problem; no
// exception escapes; "new reference" outputs are freed by the caller with
// aoti_torch_delete_tensor_object. Ops run on the calling thread's current
// stream of the tensors' device (see cuda_thread_state.h) and are
// asynchronous with respect to the host.
#pragma once

#include "shims/common/shim_abi.h"

extern "C" {

struct CUDAGuardOpaque;
typedef struct CUDAGuardOpaque* CUDAGuardHandle;
struct CUDAStreamGuardOpaque;
typedef struct CUDAStreamGuardOpaque* CUDAStreamGuardHandle;

// ---- Device and stream guards (thread-local state) ---------------------------
/// Makes `device_index` (-1: stay on the current one) the thread's current
/// device until the guard is deleted, which restores the device current at
/// creation. New guard, freed with aoti_torch_delete_cuda_guard.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
/// Switches the current device while the guard lives (restore target unchanged).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index);
/// Makes `stream` (a cudaStream_t; null = legacy default stream) the thread's
/// current stream on `device_index`, and that device current, until the guard
/// is deleted (which restores both).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                                    CUDAStreamGuardHandle* ret_guard);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
/// The thread's current stream on `device_index` (-1: current device); borrowed.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);

// ---- Raw memory from Kiln's caching allocator (weight caching allocator) ----
/// nbytes on the current device, stream-ordered on the current stream.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr);
/// Frees a pointer from raw_alloc (null is a no-op).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr);

// ---- Fallback ops (one file per op in this directory) --------------------------
// The ops that run Kiln's CPU op on host copies until they have CUDA code of
// their own are declared in host_staged.h.
/// Kiln's fused op kiln::rms_norm_linear: *ret0 = linear(rms_norm(x) * (norm_weight +
/// weight_offset), weight), at most 4 rows of x (the GEMV kernel's RMSNorm prologue).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rms_norm_linear(AtenTensorHandle x, AtenTensorHandle norm_weight,
                                                                AtenTensorHandle weight, double eps,
                                                                double weight_offset, AtenTensorHandle* ret0);
/// Kiln's op kiln::grouped_mm: input [S, K] with rows sorted by group, weight [G, K, N]
/// (any strides), offs [G] int32/int64 (on the GPU, never read by the host) the groups'
/// cumulative end rows; *ret0 [S, N] = input[rows of g] @ weight[g] per group, zero past
/// offs[G-1]. Does not synchronise; invalid offs are clamped on the device, not reported.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_grouped_mm(AtenTensorHandle input, AtenTensorHandle weight,
                                                           AtenTensorHandle offs, AtenTensorHandle* ret0);
/// Kiln's op kiln::int8_linear: *ret0 [..., N] = x [..., K] @ W^T, W[n, k] = weight[n, k]
/// (int8) * scales[n, k / group_size] (x's dtype, [N, K / group_size]); float32 sums rounded
/// once. group_size K is _weight_int8pack_mm over x's rows (shims/common/int_mm_args.h).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int8_linear(AtenTensorHandle x, AtenTensorHandle weight,
                                                            AtenTensorHandle scales, int64_t group_size,
                                                            AtenTensorHandle* ret0);
/// Kiln's op kiln::int4_linear: *ret0 [..., N] = x [..., K] @ W^T, W's 4-bit codes two a
/// byte in qweight [N, K / 2] (k even in the low nibble), dequantized as (code - 8) *
/// scale + zero with (scale, zero) = scale_zero[n, k / group_size]; float32 sums rounded
/// once to x's dtype (float32, float16, bfloat16). Checks in shims/common/int4_linear_args.h.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_int4_linear(AtenTensorHandle x, AtenTensorHandle qweight,
                                                            AtenTensorHandle scale_zero, int64_t group_size,
                                                            AtenTensorHandle* ret0);
/// out = self @ mat2 (2-D), cuBLASLt. out is preallocated with the result shape.
/// mm, addmm, bmm, mm_dtype, baddbmm, addbmm and addmv take float16, bfloat16, float32, float64,
/// complex64 and complex128 (no integers, as ATen's CUDA kernels).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2);
/// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out's shape.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                          AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                          double alpha);
/// out[b] = self[b] @ mat2[b] (3-D).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                        AtenTensorHandle mat2);
/// out[b] = beta * self + alpha * (batch1[b] @ batch2[b]) (3-D); self
/// broadcasts to out's shape, out (the caller's) keeps its strides.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                            AtenTensorHandle batch1, AtenTensorHandle batch2,
                                                            double beta, double alpha);
/// *ret0 (new, contiguous) = beta * self + alpha * sum_b batch1[b] @ batch2[b].
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addbmm(AtenTensorHandle self, AtenTensorHandle batch1,
                                                       AtenTensorHandle batch2, double beta, double alpha,
                                                       AtenTensorHandle* ret0);
/// *ret0 (new, contiguous) = beta * self + alpha * (mat @ vec).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmv(AtenTensorHandle self, AtenTensorHandle mat,
                                                      AtenTensorHandle vec, double beta, double alpha,
                                                      AtenTensorHandle* ret0);
/// out = self @ mat2 (2-D) with out of out_dtype: the operands' dtype, or
/// float32 for float16/bfloat16 operands (their float32 accumulator, unrounded).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_dtype_out(AtenTensorHandle out, AtenTensorHandle self,
                                                             AtenTensorHandle mat2, int32_t out_dtype);
/// *ret0 = relu or, with use_gelu, GELU (the tanh approximation, as ATen's CUDA
/// kernel) of beta * self + alpha * (mat1 @ mat2), self broadcast: a new
/// contiguous tensor. float16, bfloat16, float32 and float64.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1,
                                                                  AtenTensorHandle mat2, double beta, double alpha,
                                                                  int32_t use_gelu, AtenTensorHandle* ret0);
/// aten::convolution through cuDNN (1-d as 2-d, 2-d, 3-d; groups; transposed).
/// bias may be null; *ret0 is a new reference laid out like ATen's CUDA result
/// (channels-last when input or weight is channels-last).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_convolution(
    AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
    int64_t dilation_len_, int32_t transposed, const int64_t* output_padding, int64_t output_padding_len_,
    int64_t groups, AtenTensorHandle* ret0);
/// aten::_scaled_dot_product_flash_attention (Kiln's own attention kernel).
/// ret0 output (query's strides), ret1 logsumexp [B,H,L] float32, ret2/ret3
/// undefined (cum_seq), ret4/ret5 = L/S, ret6/ret7 zero philox seed/offset
/// (CPU uint64), ret8 empty debug mask. Null ret pointers are skipped.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8);
/// aten::_scaled_dot_product_efficient_attention: ret0 output ([B,L,H,Ev]
/// memory, viewed [B,H,L,Ev]), ret1 logsumexp [B,H,ceil(L/32)*32] (or
/// [B,H,0] without compute_log_sumexp), ret2/ret3 zero int64 seed/offset.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
/// aten::_scaled_dot_product_cudnn_attention: ret0 output (query's dimension
/// order), ret1 logsumexp [B,H,L,1] float32, ret2/ret3 undefined, ret4/ret5 =
/// L/S, ret6/ret7 zero int64 seed/offset, ret8 undefined.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);

/// aten::_flash_attention_forward (attention_forward.cpp): dense
/// [B, S, H, D] or packed [total, H, D] inputs (cum_seq_q/cum_seq_k int32
/// [B + 1]), float16/bfloat16, grouped-query attention, causal and sliding
/// windows aligned to the bottom right; dropout_p must be 0, seqused_k and
/// alibi_slopes null. ret0 output (query's layout), ret1 logsumexp float32
/// [B, H, Sq] dense or [H, total] packed (+inf for a row that sees no key),
/// ret2/ret3 zero CUDA uint64 [2] / [], ret4 empty debug mask.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__flash_attention_forward(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* cum_seq_q,
    AtenTensorHandle* cum_seq_k, int64_t max_q, int64_t max_k, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, int64_t* window_size_left, int64_t* window_size_right,
    AtenTensorHandle* seqused_k, AtenTensorHandle* alibi_slopes, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3, AtenTensorHandle* ret4);
/// aten::_efficient_attention_forward (attention_forward.cpp): [B, M, H, K]
/// inputs, packed along M with B = 1 when cu_seqlens_q/cu_seqlens_k (int32)
/// are given; float32/float16/bfloat16; custom_mask_type 0 none, 1 causal
/// from the top left, 2 from the bottom right; an additive or boolean bias
/// (dense only); dropout_p 0, seqlen_k null, no window. ret0 output
/// [B, M, H, Kv] contiguous, ret1 logsumexp [batches, H, ceil(max_q/32)*32]
/// ([.., .., 0] without compute_log_sumexp; 0 for a row that sees no key,
/// +inf past each batch's queries); a bottom-right mask applies to every row
/// (ATen 2.11 skips it in its first block of queries when there are more
/// queries than keys),
/// ret2/ret3 zero CPU int64 seed/offset, ret4/ret5 max query/key lengths.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__efficient_attention_forward(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* bias,
    AtenTensorHandle* cu_seqlens_q, AtenTensorHandle* cu_seqlens_k, int64_t* max_seqlen_q, int64_t* max_seqlen_k,
    double dropout_p, int64_t custom_mask_type, int32_t compute_log_sumexp, double* scale,
    AtenTensorHandle* seqlen_k, int64_t* window_size, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
    AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5);

// ---- Recurrent networks (cudnn_rnn.cpp, fused_lstm_cell.cpp): forward only.
/// aten::_cudnn_rnn for inference: RNN tanh/ReLU, LSTM (with projection), GRU (mode:
/// cuDNN's numbering 0-3); layers, bidirectional, batch_first, packed sequences
/// (batch_sizes). ret0 output, ret1 hy, ret2 cy (empty without cx), ret3 an empty
/// uint8 reserve, ret4 weight_buf itself (undefined when none was given). Dropout
/// between layers with train set is refused. Null ret pointers are skipped.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__cudnn_rnn(
    AtenTensorHandle input, const AtenTensorHandle* weight, int64_t weight_len_, int64_t weight_stride0,
    AtenTensorHandle* weight_buf, AtenTensorHandle hx, AtenTensorHandle* cx, int64_t mode, int64_t hidden_size,
    int64_t proj_size, int64_t num_layers, int32_t batch_first, double dropout, int32_t train, int32_t bidirectional,
    const int64_t* batch_sizes, int64_t batch_sizes_len_, AtenTensorHandle* dropout_state, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, AtenTensorHandle* ret4);
/// aten::_thnn_fused_lstm_cell: ret0 hy, ret1 cy (contiguous, cx's shape), ret2 the
/// activated gates [batch, 4 * hidden]; biases optional (both or neither).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__thnn_fused_lstm_cell(AtenTensorHandle input_gates,
                                                                      AtenTensorHandle hidden_gates,
                                                                      AtenTensorHandle cx, AtenTensorHandle* input_bias,
                                                                      AtenTensorHandle* hidden_bias,
                                                                      AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                                      AtenTensorHandle* ret2);

// ---- Elementwise arithmetic (add.cpp, mul.cpp, pow.cpp, abs.cpp, angle.cpp, polar.cpp, fill.cpp; complex
// included): ATen's type promotion and broadcasting, results laid out as TensorIterator would; a 0-d CPU
// tensor may stand beside CUDA tensors as a scalar.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_add_Tensor(AtenTensorHandle self, AtenTensorHandle other, double alpha, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_add_Scalar(AtenTensorHandle self, double other, double alpha, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mul_Scalar(AtenTensorHandle self, double other, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pow_Tensor_Tensor(AtenTensorHandle self, AtenTensorHandle exponent, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pow_Tensor_Scalar(AtenTensorHandle self, double exponent, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pow_Scalar(double self, AtenTensorHandle exponent, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_abs(AtenTensorHandle self, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_angle(AtenTensorHandle self, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_polar(AtenTensorHandle abs, AtenTensorHandle angle, AtenTensorHandle* ret0);
/// Sets every element of `self` in place.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fill__Scalar(AtenTensorHandle self, double value);

// ---- Advanced indexing (index.cpp): x[idx], x[mask], index_put; masks become coordinates through nonzero (which
// synchronises); out-of-range indices are an error outside graph capture.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_Tensor(AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len_, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_put(AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len_, AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0);

// ---- Scatter (scatter.cpp, index_reduce.cpp): one thread per index element writes or atomically folds one
// element; out-of-range indices are an error outside graph capture (one readback), skipped under it.
/// out = self with src's (or value's) elements written along dim where index says; out may be self.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index, AtenTensorHandle src);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index, double value);
/// As scatter, src folded in by sum, prod, mean, amax or amin (from the identity without include_self).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index, AtenTensorHandle src, const char* reduce, int32_t include_self);
/// A new contiguous self with source's slices folded (prod, mean, amax, amin) into the slices index names.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_reduce(AtenTensorHandle self, int64_t dim, AtenTensorHandle index, AtenTensorHandle source, const char* reduce, int32_t include_self, AtenTensorHandle* ret0);

// ---- Segment reduction (segment_reduce.cpp): segment bounds checked on the device (an error outside graph
// capture, one readback), then one thread per result element.
/// Sum, mean, max, min or prod of consecutive segments along axis, given by offsets or else lengths
/// (int32/int64); floating data of any strides; initial may be null. A new contiguous result.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_segment_reduce(AtenTensorHandle data, const char* reduce, AtenTensorHandle* lengths, AtenTensorHandle* indices, AtenTensorHandle* offsets, int64_t axis, int32_t unsafe, double* initial, AtenTensorHandle* ret0);

// ---- Data-dependent selections (masked_select.cpp, nonzero.cpp, repeat_interleave.cpp): a prefix count
// of the selected elements on the device places them. Results are new tensors the caller owns.
/// self where mask (bool, broadcasting with self) is false, source's next elements (row-major) where it is
/// true; contiguous of the broadcast shape. Reads the count back to check source's length, unless capturing.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_masked_scatter(AtenTensorHandle self, AtenTensorHandle mask, AtenTensorHandle source, AtenTensorHandle* ret0);
/// The elements of self (broadcast with the bool mask) where mask is true, 1-d; synchronises for the
/// count, so it refuses graph capture.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_masked_select(AtenTensorHandle self, AtenTensorHandle mask, AtenTensorHandle* ret0);
/// The first `size` coordinates of self's non-zero elements, int64 [size, ndim] with strides (1, size),
/// rows past the count fill_value; no synchronisation.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nonzero_static(AtenTensorHandle self, int64_t size, int64_t fill_value, AtenTensorHandle* ret0);
/// Index i repeated repeats[i] times, in repeats' dtype (int32/int64). Outside graph capture reads the
/// total back (to size the result, or to check output_size); under capture output_size is required.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_repeat_interleave_Tensor(AtenTensorHandle repeats, int64_t* output_size, AtenTensorHandle* ret0);

// ---- Joining, normalization, factories and integer elementwise (cat.cpp, fused_rms_norm.cpp, hann_window.cpp,
// efficientzerotensor.cpp, gcd.cpp). Results are new references the caller owns.
/// Inputs joined along dim with ATen's promotion, legacy-empty skipping and result memory format; any strides.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim, AtenTensorHandle* ret0);
/// RMS normalization over the trailing normalized_shape dims (ret0, contiguous) and rstd (ret1, float32 or
/// float64, input's shape with normalized dims 1); weight and eps may be null.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__fused_rms_norm(AtenTensorHandle input, const int64_t* normalized_shape, int64_t normalized_shape_len_, AtenTensorHandle* weight, double* eps, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// The periodic hann window of window_length elements.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_hann_window(int64_t window_length, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
/// A zero-filled contiguous tensor (Kiln has no ZeroTensor kind).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__efficientzerotensor(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
/// Elementwise greatest common divisor of integer tensors, broadcast.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_gcd(AtenTensorHandle self, AtenTensorHandle other, AtenTensorHandle* ret0);

// ---- Distances (cdist.cpp): float32/float64, any strides, summed in the input's dtype.
/// p-norm distances between the rows of x1 and x2 (batch dims broadcast); p = 2 takes ATen's matrix-product
/// formula when compute_mode (may be null) is 1, or 0/null with more than 25 rows on either side.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__cdist_forward(AtenTensorHandle x1, AtenTensorHandle x2, double p, int64_t* compute_mode, AtenTensorHandle* ret0);
/// p-norm distances between the rows (i, j > i) of a 2-d tensor, in row-major pair order.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__pdist_forward(AtenTensorHandle self, double p, AtenTensorHandle* ret0);

// ---- Linear algebra (lu_unpack.cpp, triangular_solve.cpp, cholesky.cpp, geqrf.cpp, ormqr.cpp): cuBLAS and
// cuSOLVER opened on first use; float32/float64/complex64/complex128 (lu_unpack: any dtype but float8); results
// batched column-major as ATen's (lu_unpack's and geqrf's tau contiguous).
/// P, L, U of a packed LU factorization (A = P L U); a pivot outside [1, m] is an error outside graph capture.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_lu_unpack(AtenTensorHandle LU_data, AtenTensorHandle LU_pivots, int32_t unpack_data, int32_t unpack_pivots, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2);
/// X with op(A) X = B for triangular A (batch dims broadcast), and A broadcast.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_triangular_solve(AtenTensorHandle self, AtenTensorHandle A, int32_t upper, int32_t transpose, int32_t unitriangular, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// X with A X = B, given A's Cholesky factor (batch dims broadcast).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cholesky_solve(AtenTensorHandle self, AtenTensorHandle input2, int32_t upper, AtenTensorHandle* ret0);
/// A^-1 given A's Cholesky factor; a singular factor gives infinities and NaNs (no error), as ATen's CUDA kernel.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cholesky_inverse(AtenTensorHandle self, int32_t upper, AtenTensorHandle* ret0);
/// LAPACK-style QR factorization: reflectors and R, and tau.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_geqrf(AtenTensorHandle self, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// other times the Q of geqrf's reflectors (from the left or right, transposed or not).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_ormqr(AtenTensorHandle self, AtenTensorHandle input2, AtenTensorHandle input3, int32_t left, int32_t transpose, AtenTensorHandle* ret0);

// ---- Products (trilinear.cpp): one kernel over the strided operands.
/// nn.Bilinear's contraction: i1, i2, i3 unsqueezed at expand1/2/3, broadcast, multiplied and summed over
/// sumdim; one dtype (floating, complex, int8/uint8/int16/int32/int64); a new contiguous result.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__trilinear(AtenTensorHandle i1, AtenTensorHandle i2, AtenTensorHandle i3, const int64_t* expand1, int64_t expand1_len_, const int64_t* expand2, int64_t expand2_len_, const int64_t* expand3, int64_t expand3_len_, const int64_t* sumdim, int64_t sumdim_len_, int64_t unroll_dim, AtenTensorHandle* ret0);

// ---- Scans (cumsum.cpp, logcumsumexp.cpp, cummax.cpp) and random ops (random.cpp; draw from the method's seed, aoti.seed).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_logcumsumexp(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cummax(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cummin(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rand(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_rand_generator(const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randn(const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randn_generator(const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint(int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_generator(int64_t high, const int64_t* size, int64_t size_len_, AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low(int64_t low, int64_t high, const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randint_low_out(AtenTensorHandle out, int64_t low, int64_t high, const int64_t* size, int64_t size_len_);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_randperm(int64_t n, int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_uniform(AtenTensorHandle self, double from, double to, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_normal_functional(AtenTensorHandle self, double mean, double std, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_exponential(AtenTensorHandle self, double lambd, AtenGeneratorHandle* generator, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bernoulli__float(AtenTensorHandle self, double p, AtenGeneratorHandle* generator);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bernoulli__Tensor(AtenTensorHandle self, AtenTensorHandle p, AtenGeneratorHandle* generator);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_native_dropout(AtenTensorHandle input, double p, int32_t* train, AtenTensorHandle* ret0, AtenTensorHandle* ret1);

// ---- Sorting and selection (sort.cpp, nonzero.cpp): CUB segmented sort and select.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim, int32_t descending, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest, int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nonzero(AtenTensorHandle self, AtenTensorHandle* ret0);
/// Positions of values in sorted boundaries, one thread per value (searchsorted.cpp,
/// kernels/search_kernel.h); sorter indices are not range-checked up front (an
/// index outside the line yields -1).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_searchsorted_Tensor(AtenTensorHandle sorted_sequence, AtenTensorHandle self, int32_t out_int32, int32_t right, const char** side, AtenTensorHandle* sorter, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_searchsorted_Scalar(AtenTensorHandle sorted_sequence, double self, int32_t out_int32, int32_t right, const char** side, AtenTensorHandle* sorter, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bucketize_Tensor(AtenTensorHandle self, AtenTensorHandle boundaries, int32_t out_int32, int32_t right, AtenTensorHandle* ret0);
/// Equal-width histogram of floating `self` (histc.cpp); min == max takes the data's
/// range on the device (a NaN or infinite one leaves every bin 0).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_histc(AtenTensorHandle self, int64_t bins, double min, double max, AtenTensorHandle* ret0);
/// aten::_embedding_bag and _embedding_bag_forward_only with ATen CUDA's four results
/// (embedding_bag.cpp); reads back 16 bytes to report bad indices or offsets, unless capturing.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__embedding_bag(AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq, int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__embedding_bag_forward_only(AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq, int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
/// torch.mode along `dim` with ATen CUDA's choice among equally frequent values
/// and of the position (mode.cpp, kernels/mode_kernel.h).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mode(AtenTensorHandle self, int64_t dim, int32_t keepdim, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// The k-th smallest element of each line along `dim` and its first position (kthvalue.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_kthvalue(AtenTensorHandle self, int64_t k, int64_t dim, int32_t keepdim, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Lower median of all elements as a 0-d tensor; NaN if any is NaN (median.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_median(AtenTensorHandle self, AtenTensorHandle* ret0);
/// Lower median of all non-NaN elements as a 0-d tensor (median.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nanmedian(AtenTensorHandle self, AtenTensorHandle* ret0);
/// out (int32) = self @ mat2 (int8), summed with wraparound: cuBLASLt's int8 kernels
/// for a row-major self and column-major mat2, else a tiled kernel (int_mm.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__int_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
/// self (float32/bfloat16/float16, m x k) @ mat2 (int8, n x k)^T * scales (n), float32
/// accumulation, a new contiguous m x n of self's dtype (int_mm.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__weight_int8pack_mm(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scales, AtenTensorHandle* ret0);
/// self (bfloat16, m x k) @ W^T for an int4 W (n x k) tile-packed by _convert_weight_to_int4pack
/// (int32 [n / 8, k / (innerKTiles * 16), 32, innerKTiles / 2]), dequantized as (q - 8) * scale + zero
/// per qGroupSize values of k from qScaleAndZeros [k / qGroupSize, n, 2]: a new contiguous m x n
/// bfloat16; a kernel on the packed weight up to 16 rows, else bfloat16 blocks of the dequantized
/// weight through cuBLASLt (weight_int4pack_mm.cpp, kernels/int4_mm_kernel.h).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2, int64_t qGroupSize, AtenTensorHandle qScaleAndZeros, AtenTensorHandle* ret0);
/// self @ mat2 (float8, m x k and k x n) with per-tensor or row-wise float32 scales,
/// optional bias and float8 result scale: cuBLASLt's float8 kernels for a row-major
/// self and column-major mat2, else a tiled kernel; *ret0 a new contiguous m x n
/// of out_dtype (default self's) (scaled_mm.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a, AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result, int32_t* out_dtype, int32_t use_fast_accum, AtenTensorHandle* ret0);
/// As _scaled_mm, into out ([m, n], any strides) (scaled_mm.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a, AtenTensorHandle scale_b, AtenTensorHandle* bias, AtenTensorHandle* scale_result, int32_t* out_dtype, int32_t use_fast_accum);
/// Grouped float8 product of Mixture-of-Experts layers: self and mat2 float8 e4m3fn, 2-D or
/// 3-D (offs int32 [G], the groups' cumulative ends, when one is 2-D), row-wise float32 scales
/// as ATen's; *ret0 bfloat16 in ATen's layout. No bias or scale_result, as ATen; offs is read
/// on the device only (scaled_grouped_mm.cpp).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__scaled_grouped_mm(AtenTensorHandle self, AtenTensorHandle mat2, AtenTensorHandle scale_a, AtenTensorHandle scale_b, AtenTensorHandle* offs, AtenTensorHandle* bias, AtenTensorHandle* scale_result, int32_t* out_dtype, int32_t use_fast_accum, AtenTensorHandle* ret0);

// ---- FFT (fft.cpp): cuFFT, opened on first use; results strided as ATen's CUDA kernels'.
/// n-d DFT of real float32/float64 `self` over `dim` (complex64/complex128);
/// normalization 0 none, 1 1/sqrt(n), 2 1/n; onesided halves the last of `dim`.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__fft_r2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_, int64_t normalization, int32_t onesided, AtenTensorHandle* ret0);
/// n-d DFT (forward != 0) or inverse DFT of complex64/complex128 `self` over `dim`.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__fft_c2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_, int64_t normalization, int32_t forward, AtenTensorHandle* ret0);

// ---- Padding (pad.cpp): aten::pad, every mode and dtype; value may be null.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pad(AtenTensorHandle self, const int64_t* pad, int64_t pad_len_, const char* mode, double* value, AtenTensorHandle* ret0);

// ---- Pooling (avg_pool.cpp, max_pool.cpp, fractional_max_pool.cpp, max_unpool.cpp): (N, C, spatial...) or (C, spatial...)
// inputs of any strides; float32/float64/float16/bfloat16 (max pooling and unpooling also int8, uint8,
// int16, int32, int64); results laid out as ATen's CUDA kernels lay them out. ret0 (and ret1, the
// int64 indices of the maxima within each (n, c) plane) are new references the caller owns.
/// Window means; divisor_override may be null.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_avg_pool2d(AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_, int32_t ceil_mode, int32_t count_include_pad, int64_t* divisor_override, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_avg_pool3d(AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_, int32_t ceil_mode, int32_t count_include_pad, int64_t* divisor_override, AtenTensorHandle* ret0);
/// Means over ATen's adaptive windows [floor(i*in/out), ceil((i+1)*in/out)).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__adaptive_avg_pool2d(AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__adaptive_avg_pool3d(AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle* ret0);
/// Window maxima (ret0) and their flat positions within each plane (ret1).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_pool2d_with_indices(AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_, int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_pool3d_with_indices(AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_, int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Maxima over ATen's adaptive windows, with their positions (floating dtypes only).
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_adaptive_max_pool2d(AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_adaptive_max_pool3d(AtenTensorHandle self, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Maxima of kernel_size windows placed by random_samples (N, C, 2 or 3; self's dtype), with their
/// positions; floating dtypes, contiguous results.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fractional_max_pool2d(AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fractional_max_pool3d(AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
/// Scatters self into a zeroed (N, C, output_size...) result at the flat positions `indices` (int64,
/// self's shape) names within each plane; an out-of-range index is an error outside graph capture.
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_unpool2d(AtenTensorHandle self, AtenTensorHandle indices, const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle* ret0);
KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_unpool3d(AtenTensorHandle self, AtenTensorHandle indices, const int64_t* output_size, int64_t output_size_len_, const int64_t* stride, int64_t stride_len_, const int64_t* padding, int64_t padding_len_, AtenTensorHandle* ret0);

}  // extern "C"
