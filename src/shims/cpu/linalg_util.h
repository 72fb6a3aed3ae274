// Plumbing shared by the CPU linear-algebra fallback ops that run LAPACK
// (cholesky_inverse, cholesky_solve, triangular_solve, geqrf, ormqr): batches
// of matrices (leading batch dimensions, broadcast where ATen broadcasts) are
// read through element_buffer, converted to column-major LAPACK buffers of the
// op's own precision (float, double, complex<float>, complex<double>, as ATen
// calls s/d/c/z routines), and results are written into new tensors with the
// batched column-major strides ATen's CPU kernels give them.
#pragma once

#include <algorithm>
#include <climits>
#include <complex>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/lapack_library.h"
#include "shims/common/linalg_args.h"
#include "shims/cpu/op_args.h"

namespace kiln::cpu::linalg {

template <typename T>
struct is_std_complex : std::false_type {};
template <typename T>
struct is_std_complex<std::complex<T>> : std::true_type {};

/// The element_buffer type a LAPACK type is read and written through.
template <typename T>
using Wide = std::conditional_t<is_std_complex<T>::value, Complex, double>;

/// Calls fn(T{}) with T the LAPACK element type of `dtype` (float32, float64,
/// complex64, complex128); an error naming `op`, the argument and the dtype otherwise.
template <typename Fn>
Error visit_lapack_type(DType dtype, const char* op, const char* name, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Complex64: return fn(std::complex<float>{});
    case DType::Complex128: return fn(std::complex<double>{});
    default: break;
  }
  return aoti::linalg::lapack_dtype_arg(dtype, op, name);
}

// The shape checks shared with the CUDA ops (shims/common/linalg_args.h).
using aoti::linalg::broadcast_batches;
using aoti::linalg::product;

inline Error matrix_batch_arg(const Tensor& t, const char* op, const char* name) {
  return aoti::linalg::matrix_batch_arg(t.sizes(), op, name);
}
inline Error square_batch_arg(const Tensor& t, const char* op, const char* name) {
  return aoti::linalg::square_batch_arg(t.sizes(), op, name);
}
inline std::vector<int64_t> batch_sizes(const Tensor& t) { return aoti::linalg::batch_sizes(t.sizes()); }

/// For each batch index of `out` (row-major), the batch index of `src` it
/// reads under broadcasting (`src` right-aligned, size-1 dimensions repeated).
inline std::vector<int64_t> broadcast_source(const std::vector<int64_t>& src, const std::vector<int64_t>& out) {
  const int64_t total = product(out);
  std::vector<int64_t> map(static_cast<size_t>(total));
  const size_t lead = out.size() - src.size();
  std::vector<int64_t> idx(out.size(), 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t s = 0;
    for (size_t d = 0; d < src.size(); ++d) s = s * src[d] + (src[d] == 1 ? 0 : idx[lead + d]);
    map[static_cast<size_t>(k)] = s;
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return map;
}

/// `batch` + [rows, cols] with batched column-major strides (each matrix
/// column-major, matrices one after another), as ATen's LAPACK-backed kernels
/// return their results.
inline Result<Tensor> new_column_major(const std::vector<int64_t>& batch, int64_t rows, int64_t cols, DType dtype) {
  return Tensor::empty_strided(aoti::linalg::with_matrix(batch, rows, cols),
                               aoti::linalg::batched_column_major_strides(batch, rows, cols), dtype,
                               Device{DeviceType::CPU, 0});
}

/// A LAPACK dimension (32-bit INTEGER), or an error if it does not fit.
inline Result<lapack_int> lapack_dim(int64_t n, const char* op) {
  if (n < 0 || n > INT_MAX)
    return aoti::invalid(std::string(op) + ": a matrix dimension of " + std::to_string(n) +
                         " exceeds LAPACK's 32-bit index range");
  return static_cast<lapack_int>(n);
}

/// Matrix `index` of a row-major buffer of rows x cols matrices, into a
/// column-major buffer with leading dimension `ld`.
template <typename T>
void to_column_major(const std::vector<Wide<T>>& rm, int64_t index, int64_t rows, int64_t cols, T* cm, int64_t ld) {
  const Wide<T>* m = rm.data() + index * rows * cols;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) cm[i + j * ld] = static_cast<T>(m[i * cols + j]);
}

/// The inverse of to_column_major: into matrix `index` of a row-major buffer.
template <typename T>
void from_column_major(const T* cm, int64_t ld, int64_t rows, int64_t cols, std::vector<Wide<T>>& rm, int64_t index) {
  Wide<T>* m = rm.data() + index * rows * cols;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m[i * cols + j] = static_cast<Wide<T>>(cm[i + j * ld]);
}

/// "(Batch element 3): " for a batched input, "" for a single matrix (as ATen
/// words its LAPACK errors).
inline std::string batch_prefix(bool batched, int64_t index) {
  return batched ? "(Batch element " + std::to_string(index) + "): " : "";
}

}  // namespace kiln::cpu::linalg
