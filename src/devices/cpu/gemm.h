// Strided matrix multiply over OpenBLAS: C = alpha * A @ B + beta * C for any
// element strides. Operands whose rows or columns are unit-stride go straight
// to cblas (as-is or transposed); others are packed first. Threads: products
// of up to 2^21 multiply-adds are split in row or column blocks over the model
// call's OpenMP team (parallel_for.h), larger ones use OpenBLAS's threading at
// the calling thread's OpenMP count; inside a parallel_for body, one thread.
// Thread-safety: reentrant (as OpenBLAS).
#pragma once

#include <cstdint>

#include "kiln/error.h"

namespace kiln::cpu {

/// A rows x cols matrix whose element (i, j) is at data[i * row_stride + j * col_stride].
template <typename T>
struct MatrixView {
  T* data;
  int64_t rows;
  int64_t cols;
  int64_t row_stride;
  int64_t col_stride;

  MatrixView<T> transposed() const { return {data, cols, rows, col_stride, row_stride}; }
};

/// C = alpha * A @ B + beta * C (float32 or float64). With beta == 0, C's old
/// contents are ignored (NaNs there do not propagate). Shapes must agree
/// (A.rows == C.rows, A.cols == B.rows, B.cols == C.cols); sizes and strides
/// must be non-negative. InvalidArgument if a dimension exceeds BLAS's int range.
template <typename T>
Error gemm(MatrixView<const T> a, MatrixView<const T> b, MatrixView<T> c, T alpha, T beta);

}  // namespace kiln::cpu
