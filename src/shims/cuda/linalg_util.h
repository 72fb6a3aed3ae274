// Plumbing shared by the CUDA linear-algebra ops (triangular_solve,
// cholesky_solve, cholesky_inverse, geqrf, ormqr): batched column-major
// results as ATen's cuBLAS/cuSOLVER-backed kernels return them, broadcast
// copies into them, the element type of each precision, and cuBLAS's batched
// triangular solve over evenly spaced matrices. cuBLAS and cuSOLVER are opened
// on first use (libraries/cublas_api.h, cusolver_api.h).
#pragma once

#include <cuComplex.h>

#include <algorithm>
#include <climits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cuda/device/strided_copy.h"
#include "devices/cuda/kernels/linalg_kernel.h"
#include "devices/cuda/libraries/cublas_api.h"
#include "shims/common/linalg_args.h"
#include "shims/cuda/op_util.h"

namespace kiln::cudadev::linalg {

using aoti::linalg::batch_sizes;
using aoti::linalg::batched_column_major_strides;
using aoti::linalg::product;
using aoti::linalg::with_matrix;

/// Calls fn(T{}) with T the cuBLAS/cuSOLVER element type of `dtype` (float,
/// double, cuComplex, cuDoubleComplex); an error naming `op`, the argument
/// and the dtype otherwise (the CPU op's words).
template <typename Fn>
Error visit_solver_type(DType dtype, const char* op, const char* name, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Complex64: return fn(cuComplex{});
    case DType::Complex128: return fn(cuDoubleComplex{});
    default: break;
  }
  return aoti::linalg::lapack_dtype_arg(dtype, op, name);
}

template <typename T>
inline constexpr bool is_complex_v = std::is_same_v<T, cuComplex> || std::is_same_v<T, cuDoubleComplex>;

template <typename T>
T one_of() {
  if constexpr (std::is_same_v<T, cuComplex>) return make_cuComplex(1.0f, 0.0f);
  else if constexpr (std::is_same_v<T, cuDoubleComplex>) return make_cuDoubleComplex(1.0, 0.0);
  else return T(1);
}

/// A cuBLAS/cuSOLVER dimension (32-bit int), or an error if it does not fit.
inline Result<int> solver_dim(int64_t n, const char* op) {
  if (n < 0 || n > INT_MAX)
    return aoti::invalid(std::string(op) + ": a matrix dimension of " + std::to_string(n) +
                         " exceeds cuSOLVER's 32-bit index range");
  return static_cast<int>(n);
}

/// A new CUDA tensor `batch` + [rows, cols], batched column-major.
inline Result<OwnedHandle> new_column_major(std::span<const int64_t> batch, int64_t rows, int64_t cols, DType dtype,
                                            int device) {
  const std::vector<int64_t> sizes = with_matrix(batch, rows, cols);
  const std::vector<int64_t> strides = batched_column_major_strides(batch, rows, cols);
  return new_tensor(sizes, strides, dtype, static_cast<int32_t>(DeviceType::CUDA), device);
}

/// Copies `src` (argument `name`), broadcast to `sizes`, into `dst` laid out
/// with `dst_strides` (elements), on `stream`.
inline Error copy_broadcast(const TensorRef& src, const char* name, void* dst, std::span<const int64_t> sizes,
                            std::span<const int64_t> dst_strides, cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> src_strides, broadcast_strides(src, sizes, name));
  return launch_strided_copy(dst, dst_strides.data(), src.data, src_strides.data(), sizes.data(),
                             static_cast<int64_t>(sizes.size()), src.element_bytes(), stream);
}

/// Solves op(A_b) X_b = B_b in place of B_b for `batches` column-major
/// matrices (A_b: n x n at a + b * a_stride elements, leading dimension n;
/// B_b: n x nrhs at b + b * b_stride, leading dimension n) through cuBLAS's
/// batched trsm on `stream`. Nothing to do when any size is 0.
template <typename T>
Error batched_trsm(int device, cudaStream_t stream, cublasFillMode_t uplo, cublasOperation_t trans,
                   cublasDiagType_t diag, int64_t n, int64_t nrhs, T* a, int64_t a_stride, T* b, int64_t b_stride,
                   int64_t batches, const char* op) {
  if (n == 0 || nrhs == 0 || batches == 0) return Error::Ok;
  KILN_ASSIGN_OR_RETURN(int ln, solver_dim(n, op));
  KILN_ASSIGN_OR_RETURN(int lk, solver_dim(nrhs, op));
  KILN_ASSIGN_OR_RETURN(const CublasApi* api, cublas());
  KILN_ASSIGN_OR_RETURN(cublasHandle_t handle, cublas_handle(*api, device));
  KILN_RETURN_IF_ERROR(cublas_call_status(*api, api->set_stream(handle, stream), "cublasSetStream"));
  // cuBLAS counts matrices in an int: larger batches go in chunks.
  const int64_t chunk = std::min<int64_t>(batches, INT_MAX);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer pointers,
                        DeviceBuffer::allocate(2 * static_cast<size_t>(chunk) * sizeof(void*), device, stream));
  void** a_ptrs = static_cast<void**>(pointers.get());
  void** b_ptrs = a_ptrs + chunk;
  const T alpha = one_of<T>();
  for (int64_t start = 0; start < batches; start += chunk) {
    const int64_t count = std::min(chunk, batches - start);
    KILN_RETURN_IF_ERROR(launch_batch_pointers(a_ptrs, a + start * a_stride,
                                               a_stride * static_cast<int64_t>(sizeof(T)), count, stream));
    KILN_RETURN_IF_ERROR(launch_batch_pointers(b_ptrs, b + start * b_stride,
                                               b_stride * static_cast<int64_t>(sizeof(T)), count, stream));
    const int c = static_cast<int>(count);
    cublasStatus_t status;
    if constexpr (std::is_same_v<T, float>)
      status = api->strsm_batched(handle, CUBLAS_SIDE_LEFT, uplo, trans, diag, ln, lk, &alpha,
                                  reinterpret_cast<const float* const*>(a_ptrs), ln,
                                  reinterpret_cast<float* const*>(b_ptrs), ln, c);
    else if constexpr (std::is_same_v<T, double>)
      status = api->dtrsm_batched(handle, CUBLAS_SIDE_LEFT, uplo, trans, diag, ln, lk, &alpha,
                                  reinterpret_cast<const double* const*>(a_ptrs), ln,
                                  reinterpret_cast<double* const*>(b_ptrs), ln, c);
    else if constexpr (std::is_same_v<T, cuComplex>)
      status = api->ctrsm_batched(handle, CUBLAS_SIDE_LEFT, uplo, trans, diag, ln, lk, &alpha,
                                  reinterpret_cast<const cuComplex* const*>(a_ptrs), ln,
                                  reinterpret_cast<cuComplex* const*>(b_ptrs), ln, c);
    else
      status = api->ztrsm_batched(handle, CUBLAS_SIDE_LEFT, uplo, trans, diag, ln, lk, &alpha,
                                  reinterpret_cast<const cuDoubleComplex* const*>(a_ptrs), ln,
                                  reinterpret_cast<cuDoubleComplex* const*>(b_ptrs), ln, c);
    KILN_RETURN_IF_ERROR(cublas_call_status(*api, status, "cublas<t>trsmBatched"));
  }
  return Error::Ok;
}

}  // namespace kiln::cudadev::linalg
