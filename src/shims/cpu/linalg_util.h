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
  return aoti::invalid(std::string(op) + ": argument '" + name + "' has dtype " + dtype_name(dtype) +
                       "; supported are float32, float64, complex64 and complex128");
}

/// Error unless `t` has at least 2 dimensions (a batch of matrices).
inline Error matrix_batch_arg(const Tensor& t, const char* op, const char* name) {
  if (t.dim() < 2)
    return aoti::invalid(std::string(op) + ": argument '" + name + "' must have at least 2 dimensions, got shape " +
                         aoti::shape_string(t.sizes()));
  return Error::Ok;
}

/// Error unless `t` is a batch of square matrices.
inline Error square_batch_arg(const Tensor& t, const char* op, const char* name) {
  KILN_RETURN_IF_ERROR(matrix_batch_arg(t, op, name));
  if (t.size(t.dim() - 1) != t.size(t.dim() - 2))
    return aoti::invalid(std::string(op) + ": argument '" + name + "' must be batches of square matrices, but they are " +
                         std::to_string(t.size(t.dim() - 2)) + " by " + std::to_string(t.size(t.dim() - 1)) +
                         " matrices");
  return Error::Ok;
}

/// The leading (batch) sizes of a batch of matrices.
inline std::vector<int64_t> batch_sizes(const Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - 2);
}

inline int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

/// The broadcast of two batch shapes (numpy rules), or an error naming both.
inline Result<std::vector<int64_t>> broadcast_batches(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                                      const char* op, const char* a_name, const char* b_name) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      return aoti::invalid(std::string(op) + ": the batch dimensions of '" + a_name + "' " + aoti::shape_string(a) +
                           " and '" + b_name + "' " + aoti::shape_string(b) + " cannot be broadcast together");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

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
  std::vector<int64_t> sizes = batch;
  sizes.push_back(rows);
  sizes.push_back(cols);
  std::vector<int64_t> strides(sizes.size());
  strides[sizes.size() - 2] = 1;
  strides[sizes.size() - 1] = std::max<int64_t>(rows, 1);
  int64_t step = std::max<int64_t>(rows * cols, 1);
  for (size_t d = batch.size(); d-- > 0;) {
    strides[d] = step;
    step *= std::max<int64_t>(batch[d], 1);
  }
  return Tensor::empty_strided(sizes, strides, dtype, Device{DeviceType::CPU, 0});
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
