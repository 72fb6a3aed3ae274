// Argument checks and result layouts shared by every device's LAPACK-style
// ops (lu_unpack, triangular_solve, cholesky_solve, cholesky_inverse, geqrf,
// ormqr), so the devices refuse the same inputs with the same messages and
// lay their results out alike: batches of matrices (leading batch
// dimensions, broadcast where ATen broadcasts), results batched column-major
// as ATen's LAPACK/cuSOLVER-backed kernels return them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti::linalg {

/// Ok for the dtypes ATen's LAPACK-backed kernels take (float32, float64,
/// complex64, complex128); an error naming `op`, the argument and the dtype otherwise.
inline Error lapack_dtype_arg(DType dtype, const char* op, const char* name) {
  if (dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Complex64 || dtype == DType::Complex128)
    return Error::Ok;
  return invalid(std::string(op) + ": argument '" + name + "' has dtype " + dtype_name(dtype) +
                 "; supported are float32, float64, complex64 and complex128");
}

/// Error unless `sizes` has at least 2 dimensions (a batch of matrices).
inline Error matrix_batch_arg(std::span<const int64_t> sizes, const char* op, const char* name) {
  if (sizes.size() < 2)
    return invalid(std::string(op) + ": argument '" + name + "' must have at least 2 dimensions, got shape " +
                   shape_string(sizes));
  return Error::Ok;
}

/// Error unless `sizes` is a batch of square matrices.
inline Error square_batch_arg(std::span<const int64_t> sizes, const char* op, const char* name) {
  KILN_RETURN_IF_ERROR(matrix_batch_arg(sizes, op, name));
  const int64_t rows = sizes[sizes.size() - 2], cols = sizes[sizes.size() - 1];
  if (rows != cols)
    return invalid(std::string(op) + ": argument '" + name + "' must be batches of square matrices, but they are " +
                   std::to_string(rows) + " by " + std::to_string(cols) + " matrices");
  return Error::Ok;
}

/// The leading (batch) sizes of a batch of matrices.
inline std::vector<int64_t> batch_sizes(std::span<const int64_t> sizes) {
  return std::vector<int64_t>(sizes.begin(), sizes.end() - 2);
}

inline int64_t product(std::span<const int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

/// The broadcast of two batch shapes (numpy rules), or an error naming both.
inline Result<std::vector<int64_t>> broadcast_batches(std::span<const int64_t> a, std::span<const int64_t> b,
                                                      const char* op, const char* a_name, const char* b_name) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      return invalid(std::string(op) + ": the batch dimensions of '" + a_name + "' " + shape_string(a) + " and '" +
                     b_name + "' " + shape_string(b) + " cannot be broadcast together");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// `batch` + [rows, cols]: the sizes of a batch of matrices.
inline std::vector<int64_t> with_matrix(std::span<const int64_t> batch, int64_t rows, int64_t cols) {
  std::vector<int64_t> sizes(batch.begin(), batch.end());
  sizes.push_back(rows);
  sizes.push_back(cols);
  return sizes;
}

/// Batched column-major strides of `batch` + [rows, cols] (each matrix
/// column-major, matrices one after another), as ATen's LAPACK-backed
/// kernels (cloneBatchedColumnMajor) lay out their results.
inline std::vector<int64_t> batched_column_major_strides(std::span<const int64_t> batch, int64_t rows, int64_t cols) {
  std::vector<int64_t> strides(batch.size() + 2);
  strides[batch.size()] = 1;
  strides[batch.size() + 1] = std::max<int64_t>(rows, 1);
  int64_t step = std::max<int64_t>(rows * cols, 1);
  for (size_t d = batch.size(); d-- > 0;) {
    strides[d] = step;
    step *= std::max<int64_t>(batch[d], 1);
  }
  return strides;
}

/// The checks of a triangular system op(A) X = B (triangular_solve; also
/// cholesky_solve, whose A is the factor): B a batch of matrices, A of square
/// ones, the same dtype, A's order = B's rows, batch dimensions that
/// broadcast. Returns the broadcast batch shape.
inline Result<std::vector<int64_t>> triangular_system_args(DType rhs_dtype, std::span<const int64_t> rhs,
                                                          DType coeff_dtype, std::span<const int64_t> coeff,
                                                          const char* op, const char* rhs_name,
                                                          const char* coeff_name) {
  KILN_RETURN_IF_ERROR(matrix_batch_arg(rhs, op, rhs_name));
  KILN_RETURN_IF_ERROR(square_batch_arg(coeff, op, coeff_name));
  if (rhs_dtype != coeff_dtype)
    return invalid(std::string(op) + ": '" + rhs_name + "' has dtype " + dtype_name(rhs_dtype) + " but '" +
                   coeff_name + "' has " + dtype_name(coeff_dtype) + "; they must match");
  const int64_t n = coeff[coeff.size() - 1];
  const int64_t rows = rhs[rhs.size() - 2];
  if (rows != n)
    return invalid(std::string(op) + ": incompatible matrix sizes: each '" + coeff_name + "' matrix is " +
                   std::to_string(n) + " by " + std::to_string(n) + " but each '" + rhs_name + "' matrix is " +
                   std::to_string(rows) + " by " + std::to_string(rhs[rhs.size() - 1]));
  return broadcast_batches(batch_sizes(rhs), batch_sizes(coeff), op, rhs_name, coeff_name);
}

/// lu_unpack's checks (LU_data a batch of m x n matrices, LU_pivots int32 of
/// shape LU_data.shape[:-2] + [min(m, n)]). Unlike ATen, pivots whose batch
/// dimensions differ from LU_data's are refused rather than broadcast:
/// ATen's kernel indexes broadcast pivots wrongly (every batch element past
/// the first gets the identity).
inline Error lu_unpack_args(std::span<const int64_t> lu, DType pivots_dtype, std::span<const int64_t> pivots) {
  constexpr const char* op = "lu_unpack";
  KILN_RETURN_IF_ERROR(matrix_batch_arg(lu, op, "LU_data"));
  if (pivots_dtype != DType::Int32)
    return invalid(std::string(op) + ": 'LU_pivots' has dtype " + dtype_name(pivots_dtype) +
                   ", expected int32 (as linalg.lu_factor returns)");
  const int64_t m = lu[lu.size() - 2], n = lu[lu.size() - 1];
  const int64_t k = std::min(m, n);
  if (pivots.empty() || pivots[pivots.size() - 1] != k)
    return invalid(std::string(op) + ": 'LU_pivots' has shape " + shape_string(pivots) +
                   ", expected last dimension min(m, n) = " + std::to_string(k));
  if (std::vector<int64_t>(pivots.begin(), pivots.end() - 1) != batch_sizes(lu))
    return invalid(std::string(op) + ": the batch dimensions of 'LU_pivots' " + shape_string(pivots) +
                   " must equal those of 'LU_data' " + shape_string(lu));
  return Error::Ok;
}

/// lu_unpack's error for a pivot outside [1, m].
inline Error lu_pivot_range_error(int64_t pivot, int64_t m) {
  return invalid("lu_unpack: pivot " + std::to_string(pivot) + " in 'LU_pivots' is outside [1, " + std::to_string(m) +
                 "] (LU_data.size(-2)); pass the pivots linalg.lu_factor returned");
}

/// ormqr's checks, as ATen: self (the reflectors), tau and other share batch
/// dimensions exactly (no broadcasting) and the dtype.
inline Error ormqr_args(DType input_dtype, std::span<const int64_t> input, DType tau_dtype,
                        std::span<const int64_t> tau, DType other_dtype, std::span<const int64_t> other, bool left) {
  constexpr const char* op = "ormqr";
  KILN_RETURN_IF_ERROR(matrix_batch_arg(input, op, "self"));
  KILN_RETURN_IF_ERROR(matrix_batch_arg(other, op, "input3"));
  const char* other_dim = left ? "input3.shape[-2]" : "input3.shape[-1]";
  const int64_t other_len = other[other.size() - (left ? 2 : 1)];
  const int64_t rows = input[input.size() - 2];
  if (other_len != rows)
    return invalid(std::string(op) + ": " + other_dim + " is " + std::to_string(other_len) +
                   ", must be equal to self.shape[-2] (" + std::to_string(rows) + ")");
  if (tau.size() + 1 != input.size())
    return invalid(std::string(op) + ": 'input2' (tau) must have one dimension less than 'self', got shapes " +
                   shape_string(tau) + " and " + shape_string(input));
  const int64_t k = std::min(other_len, input[input.size() - 1]);
  if (tau[tau.size() - 1] != k)
    return invalid(std::string(op) + ": tau.shape[-1] is " + std::to_string(tau[tau.size() - 1]) +
                   ", must be equal to min(" + other_dim + ", self.shape[-1]) = " + std::to_string(k));
  if (other.size() != input.size())
    return invalid(std::string(op) + ": 'input3' must have as many dimensions as 'self', got shapes " +
                   shape_string(other) + " and " + shape_string(input));
  const std::vector<int64_t> batch = batch_sizes(input);
  if (std::vector<int64_t>(tau.begin(), tau.end() - 1) != batch)
    return invalid(std::string(op) + ": batch dimensions of tau " + shape_string(tau) + " must equal self.shape[:-2] " +
                   shape_string(batch));
  if (batch_sizes(other) != batch)
    return invalid(std::string(op) + ": batch dimensions of 'input3' " + shape_string(other) +
                   " must equal self.shape[:-2] " + shape_string(batch));
  if (tau_dtype != input_dtype || other_dtype != input_dtype)
    return invalid(std::string(op) + ": 'self', 'input2' and 'input3' must have the same dtype, got " +
                   dtype_name(input_dtype) + ", " + dtype_name(tau_dtype) + " and " + dtype_name(other_dtype));
  return Error::Ok;
}

}  // namespace kiln::aoti::linalg
