// aoti_torch_cuda_ormqr: other multiplied by the Q that geqrf's Householder
// reflectors (self, tau) represent: Q C, Q^T C (Q^H for complex), C Q or
// C Q^T, through cuSOLVER's ormqr / unmqr in the input's precision, one
// matrix at a time, with the CPU op's argument rules and messages
// (shims/common/linalg_args.h): self, tau and other share batch dimensions
// exactly (no broadcasting); the result has other's shape, batched
// column-major as ATen's. devInfo (which only flags an illegal argument) stays
// on the device, so nothing synchronises.
#include <algorithm>
#include <string>
#include <vector>

#include "devices/cuda/libraries/cusolver_api.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/linalg_util.h"

using namespace kiln;
using namespace kiln::cudadev;
using namespace kiln::cudadev::linalg;

namespace {

constexpr const char* kOp = "ormqr";

// The sizes of one product: C is m x n, the reflectors `rows` long (lda) in
// the first k of `cols` columns of A.
struct OrmqrShape {
  int64_t m, n, k, rows, cols, batches;
};

template <typename T>
Error ormqr_batches(int device, cudaStream_t stream, const OrmqrShape& s, bool left, bool transpose, const T* a,
                    const T* tau, T* c) {
  KILN_ASSIGN_OR_RETURN(int m, solver_dim(s.m, kOp));
  KILN_ASSIGN_OR_RETURN(int n, solver_dim(s.n, kOp));
  KILN_ASSIGN_OR_RETURN(int k, solver_dim(s.k, kOp));
  KILN_ASSIGN_OR_RETURN(int lda, solver_dim(s.rows, kOp));
  KILN_ASSIGN_OR_RETURN(const CusolverApi* api, cusolver());
  KILN_ASSIGN_OR_RETURN(cusolverDnHandle_t handle, cusolver_handle(*api, device));
  KILN_RETURN_IF_ERROR(cusolver_status(api->set_stream(handle, stream), "cusolverDnSetStream"));
  const cublasSideMode_t side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
  const cublasOperation_t trans = !transpose ? CUBLAS_OP_N : (is_complex_v<T> ? CUBLAS_OP_C : CUBLAS_OP_T);
  int lwork = 0;
  cusolverStatus_t status;
  if constexpr (std::is_same_v<T, float>)
    status = api->sormqr_size(handle, side, trans, m, n, k, a, lda, tau, c, m, &lwork);
  else if constexpr (std::is_same_v<T, double>)
    status = api->dormqr_size(handle, side, trans, m, n, k, a, lda, tau, c, m, &lwork);
  else if constexpr (std::is_same_v<T, cuComplex>)
    status = api->cunmqr_size(handle, side, trans, m, n, k, a, lda, tau, c, m, &lwork);
  else
    status = api->zunmqr_size(handle, side, trans, m, n, k, a, lda, tau, c, m, &lwork);
  KILN_RETURN_IF_ERROR(cusolver_status(status, "cusolverDn<t>ormqr_bufferSize"));
  lwork = std::max(lwork, 1);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer work,
                        DeviceBuffer::allocate(static_cast<size_t>(lwork) * sizeof(T), device, stream));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer info, DeviceBuffer::allocate(sizeof(int), device, stream));
  T* w = static_cast<T*>(work.get());
  int* dev_info = static_cast<int*>(info.get());
  for (int64_t b = 0; b < s.batches; ++b) {
    const T* ab = a + b * s.rows * s.cols;
    const T* tb = tau + b * s.k;
    T* cb = c + b * s.m * s.n;
    if constexpr (std::is_same_v<T, float>)
      status = api->sormqr(handle, side, trans, m, n, k, ab, lda, tb, cb, m, w, lwork, dev_info);
    else if constexpr (std::is_same_v<T, double>)
      status = api->dormqr(handle, side, trans, m, n, k, ab, lda, tb, cb, m, w, lwork, dev_info);
    else if constexpr (std::is_same_v<T, cuComplex>)
      status = api->cunmqr(handle, side, trans, m, n, k, ab, lda, tb, cb, m, w, lwork, dev_info);
    else
      status = api->zunmqr(handle, side, trans, m, n, k, ab, lda, tb, cb, m, w, lwork, dev_info);
    KILN_RETURN_IF_ERROR(cusolver_status(status, "cusolverDn<t>ormqr"));
  }
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_ormqr(AtenTensorHandle self, AtenTensorHandle input2,
                                                      AtenTensorHandle input3, int32_t left, int32_t transpose,
                                                      AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_ormqr", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef input, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef tau, read_tensor(input2, "input2"));
    KILN_ASSIGN_OR_RETURN(TensorRef other, read_tensor(input3, "input3"));
    KILN_RETURN_IF_ERROR(aoti::linalg::ormqr_args(input.dtype, input.sizes, tau.dtype, tau.sizes, other.dtype,
                                                  other.sizes, left != 0));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(tau, input, "input2", "self"));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(other, input, "input3", "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lapack_dtype_arg(input.dtype, kOp, "self"));
    const std::vector<int64_t> batch = batch_sizes(other.sizes);
    OrmqrShape s;
    s.m = other.sizes[other.sizes.size() - 2];
    s.n = other.sizes.back();
    s.k = tau.sizes.back();
    s.rows = input.sizes[input.sizes.size() - 2];
    s.cols = input.sizes.back();
    s.batches = product(batch);
    const int device = input.device_index;
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    const cudaStream_t stream = current_stream(device);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_column_major(batch, s.m, s.n, other.dtype, device));
    KILN_ASSIGN_OR_RETURN(TensorRef c, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(copy_broadcast(other, "input3", c.data, c.sizes, c.strides, stream));
    if (s.m > 0 && s.n > 0 && s.k > 0 && s.batches > 0) {
      // The reflectors gathered column-major (lda = rows) and tau contiguous.
      const size_t elem = input.element_bytes();
      KILN_ASSIGN_OR_RETURN(DeviceBuffer a_buffer,
                            DeviceBuffer::allocate(static_cast<size_t>(s.batches * s.rows * s.cols) * elem, device,
                                                   stream));
      const std::vector<int64_t> a_strides = batched_column_major_strides(batch, s.rows, s.cols);
      KILN_RETURN_IF_ERROR(copy_broadcast(input, "self", a_buffer.get(), input.sizes, a_strides, stream));
      KILN_ASSIGN_OR_RETURN(DeviceBuffer tau_buffer,
                            DeviceBuffer::allocate(static_cast<size_t>(s.batches * s.k) * elem, device, stream));
      const std::vector<int64_t> tau_strides = contiguous_strides(tau.sizes);
      KILN_RETURN_IF_ERROR(copy_broadcast(tau, "input2", tau_buffer.get(), tau.sizes, tau_strides, stream));
      KILN_RETURN_IF_ERROR(visit_solver_type(input.dtype, kOp, "self", [&](auto tag) -> Error {
        using T = decltype(tag);
        return ormqr_batches<T>(device, stream, s, left != 0, transpose != 0, static_cast<const T*>(a_buffer.get()),
                                static_cast<const T*>(tau_buffer.get()), static_cast<T*>(c.data));
      }));
    }
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
