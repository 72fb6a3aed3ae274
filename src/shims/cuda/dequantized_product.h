// The product of a weight-only quantized linear when x has many rows: the
// weight is dequantized in blocks of output columns into one reused
// temporary of x's dtype, and each block is multiplied on the tensor cores by
// the shared product (matmul.h). A whole large layer dequantized at once
// would take hundreds of MiB next to its packed bytes; a block is bounded.
#pragma once

#include <cstdint>
#include <functional>

#include "kiln/error.h"
#include "shims/cuda/tensor_ref.h"

namespace kiln::cudadev {

/// Writes weight rows [j0, j0 + cols) (output columns), dequantized to x's
/// dtype, into `block`: row-major [cols, k].
using DequantizeBlock = std::function<Error(int64_t j0, int64_t cols, void* block, cudaStream_t stream)>;

/// out (m x n, contiguous, x's dtype) = x (m x k) @ W^T, with W produced
/// block by block by `dequantize`; blocks are whole multiples of
/// `col_multiple` columns (a packed layout's tile width) except the last.
Error dequantized_product(const TensorRef& x, int64_t n, int64_t col_multiple, const DequantizeBlock& dequantize,
                          const TensorRef& out, cudaStream_t stream);

}  // namespace kiln::cudadev
