// aoti_torch_cuda_cholesky_solve, aoti_torch_cuda_cholesky_inverse: the
// solution of A X = B and the inverse of A, given A's Cholesky factor (A =
// L L^H, or U^H U with upper), as ATen's CUDA kernels compute them: a single
// matrix through cuSOLVER's potrs, a batch through two batched triangular
// solves in cuBLAS (L Y = B, then L^H X = Y), and the inverse as the solution
// against the identity. The CPU op's argument rules and messages
// (shims/common/linalg_args.h); cholesky_solve broadcasts the batch
// dimensions of B and the factor; results are batched column-major like
// ATen's. potrs's devInfo stays on the device (it only flags an illegal
// argument, which the checks exclude), so nothing synchronises; and, as on
// ATen's CUDA path, a zero on the factor's diagonal is not an error (unlike
// the CPU op's cholesky_inverse): the result holds infinities and NaNs.
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/libraries/cusolver_api.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/linalg_util.h"

using namespace kiln;
using namespace kiln::cudadev;
using namespace kiln::cudadev::linalg;

namespace {

template <typename T>
Error potrs(int device, cudaStream_t stream, cublasFillMode_t uplo, int n, int nrhs, const T* a, T* b) {
  KILN_ASSIGN_OR_RETURN(const CusolverApi* api, cusolver());
  KILN_ASSIGN_OR_RETURN(cusolverDnHandle_t handle, cusolver_handle(*api, device));
  KILN_RETURN_IF_ERROR(cusolver_status(api->set_stream(handle, stream), "cusolverDnSetStream"));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer info, DeviceBuffer::allocate(sizeof(int), device, stream));
  int* dev_info = static_cast<int*>(info.get());
  cusolverStatus_t status;
  if constexpr (std::is_same_v<T, float>) status = api->spotrs(handle, uplo, n, nrhs, a, n, b, n, dev_info);
  else if constexpr (std::is_same_v<T, double>) status = api->dpotrs(handle, uplo, n, nrhs, a, n, b, n, dev_info);
  else if constexpr (std::is_same_v<T, cuComplex>) status = api->cpotrs(handle, uplo, n, nrhs, a, n, b, n, dev_info);
  else status = api->zpotrs(handle, uplo, n, nrhs, a, n, b, n, dev_info);
  return cusolver_status(status, "cusolverDn<t>potrs");
}

// X (batched column-major [batch, n, nrhs] at `x`, holding B) := A^-1 B for
// A = factor factor^H (lower) or factor^H factor (upper); `factor` is read
// broadcast to `batch`.
template <typename T>
Error solve_with_factor(int device, cudaStream_t stream, const TensorRef& factor, const char* factor_name,
                        const std::vector<int64_t>& batch, bool upper, T* x, int64_t n, int64_t nrhs,
                        const char* op) {
  const int64_t batches = product(batch);
  if (n == 0 || nrhs == 0 || batches == 0) return Error::Ok;
  // The factor gathered column-major, one matrix per batch element.
  const std::vector<int64_t> a_sizes = with_matrix(batch, n, n);
  const std::vector<int64_t> a_strides = batched_column_major_strides(batch, n, n);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer a_buffer,
                        DeviceBuffer::allocate(static_cast<size_t>(batches * n * n) * sizeof(T), device, stream));
  T* a = static_cast<T*>(a_buffer.get());
  KILN_RETURN_IF_ERROR(copy_broadcast(factor, factor_name, a, a_sizes, a_strides, stream));
  const cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  if (batches == 1) {
    KILN_ASSIGN_OR_RETURN(int ln, solver_dim(n, op));
    KILN_ASSIGN_OR_RETURN(int lk, solver_dim(nrhs, op));
    return potrs<T>(device, stream, uplo, ln, lk, a, x);
  }
  // L Y = B, then L^H X = Y; with upper, U^H Y = B, then U X = Y.
  const cublasOperation_t first = upper ? CUBLAS_OP_C : CUBLAS_OP_N;
  const cublasOperation_t second = upper ? CUBLAS_OP_N : CUBLAS_OP_C;
  KILN_RETURN_IF_ERROR(batched_trsm<T>(device, stream, uplo, first, CUBLAS_DIAG_NON_UNIT, n, nrhs, a, n * n, x,
                                       n * nrhs, batches, op));
  return batched_trsm<T>(device, stream, uplo, second, CUBLAS_DIAG_NON_UNIT, n, nrhs, a, n * n, x, n * nrhs, batches,
                         op);
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cholesky_solve(AtenTensorHandle self, AtenTensorHandle input2,
                                                               int32_t upper, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_cholesky_solve", [&]() -> Error {
    constexpr const char* op = "cholesky_solve";
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef rhs, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef factor, read_tensor(input2, "input2"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                          aoti::linalg::triangular_system_args(rhs.dtype, rhs.sizes, factor.dtype, factor.sizes, op,
                                                               "self", "input2"));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(factor, rhs, "input2", "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lapack_dtype_arg(rhs.dtype, op, "self"));
    const int64_t n = factor.sizes.back();
    const int64_t k = rhs.sizes.back();
    const int device = rhs.device_index;
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    const cudaStream_t stream = current_stream(device);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_column_major(batch, n, k, rhs.dtype, device));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(copy_broadcast(rhs, "self", x.data, x.sizes, x.strides, stream));
    KILN_RETURN_IF_ERROR(visit_solver_type(rhs.dtype, op, "self", [&](auto tag) -> Error {
      using T = decltype(tag);
      return solve_with_factor<T>(device, stream, factor, "input2", batch, upper != 0, static_cast<T*>(x.data), n, k,
                                  op);
    }));
    return return_handle(out, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cholesky_inverse(AtenTensorHandle self, int32_t upper,
                                                                 AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_cholesky_inverse", [&]() -> Error {
    constexpr const char* op = "cholesky_inverse";
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef factor, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::square_batch_arg(factor.sizes, op, "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lapack_dtype_arg(factor.dtype, op, "self"));
    const int64_t n = factor.sizes.back();
    const std::vector<int64_t> batch = batch_sizes(factor.sizes);
    const int64_t batches = product(batch);
    const int device = factor.device_index;
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    const cudaStream_t stream = current_stream(device);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_column_major(batch, n, n, factor.dtype, device));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(out.get(), "ret0"));
    if (batches * n > 0) {
      // The identity, which the solve turns into A^-1.
      KILN_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(x.data, 0, static_cast<size_t>(batches * n * n) * x.element_bytes(), stream));
      ElementBits one;
      one_bits(factor.dtype, &one);
      KILN_RETURN_IF_ERROR(launch_set_diagonal(x.data, batches, n, n * n, x.element_bytes(), one, stream));
    }
    KILN_RETURN_IF_ERROR(visit_solver_type(factor.dtype, op, "self", [&](auto tag) -> Error {
      using T = decltype(tag);
      return solve_with_factor<T>(device, stream, factor, "self", batch, upper != 0, static_cast<T*>(x.data), n, n,
                                  op);
    }));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
