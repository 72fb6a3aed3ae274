// The matrix products the CUDA product ops share (mm.cpp: mm_out, bmm_out,
// addmm_out; baddbmm.cpp: baddbmm_out, addbmm; addmv.cpp: addmv): argument
// checks and out = alpha * a @ b + beta * addend through cuBLASLt, or the
// GEMV kernel for few rows (matmul.cpp says when).
#pragma once

#include <cstddef>
#include <cstdint>

#include "devices/cuda/kernels/activation_kernel.h"
#include "shims/common/shim_abi.h"
#include "shims/cuda/tensor_ref.h"

namespace kiln::cudadev {

/// An addmm addend that is one value per output column, broadcast over the
/// rows (nn.Linear's bias): column n's value at ptr + n * stride elements.
struct RowBias {
  const void* ptr = nullptr;
  int64_t stride = 0;
};

/// InvalidArgument unless `t` has out's dtype and is on out's device (the
/// message names argument `name`).
Error check_same(const TensorRef& out, const TensorRef& t, const char* name);

/// NotSupported, with a message saying so, unless `dtype` is one ATen's CUDA
/// matrix products take: float16, bfloat16, float32, float64, complex64 or
/// complex128 (ATen's CUDA kernels have no integer product).
Error check_product_dtype(DType dtype);

/// Reads and checks (out, a, b) of a matrix product of `rank` 2 (mm) or 3
/// (bmm): ranks, one dtype (check_product_dtype) and device, and out = a @ b
/// shapes.
Error read_product(AtenTensorHandle out_h, AtenTensorHandle a_h, AtenTensorHandle b_h, const char* a_name,
                   const char* b_name, size_t rank, TensorRef& out, TensorRef& a, TensorRef& b);

/// out[b] = alpha * a[b] @ b[b] + beta * addend for 2-D (batch 1) or 3-D
/// tensors, on the current stream of out's device. The addend is `bias`
/// broadcast over the rows when it is set (2-D only), else out's own value
/// (with beta != 0, out must hold it already). a and b share a dtype; out's
/// is the same, or float32 for float16/bfloat16 operands (mm with out_dtype).
/// An empty inner dimension (k == 0) leaves out = beta * addend, zeros with
/// beta == 0 (a scale kernel: cuBLASLt takes no k of 0).
///
/// With `fused` other than None, out = fused(alpha * a @ b + bias) in one
/// cuBLASLt call with a bias-and-activation epilogue, as ATen's
/// _addmm_activation on CUDA when its conditions hold; where this cannot be
/// done (out not a row-major 2-D matrix, beta not 1, bias not a contiguous,
/// 16-byte aligned row of out's dtype, or no cuBLASLt algorithm for it) the
/// result is NotSupported and out has not been written: the caller computes
/// the product and the activation separately.
Error matmul_into(const TensorRef& out, const TensorRef& a, const TensorRef& b, double alpha, double beta,
                  RowBias bias = {}, Activation fused = Activation::None);

/// out = beta * self + alpha * a @ b (2-D), self broadcast to out's shape
/// (ATen's addmm); with beta == 0 self is not read at all, so NaNs in it do
/// not leak, as in ATen. out, a and b come from read_product.
Error addmm_into(const TensorRef& out, AtenTensorHandle self, const TensorRef& a, const TensorRef& b,
                 double beta, double alpha);

}  // namespace kiln::cudadev
