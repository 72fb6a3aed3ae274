// aoti_torch_cuda_geqrf: the QR factorization of each matrix of a batch as
// LAPACK's geqrf gives it (R on and above the diagonal, the Householder
// vectors below it, and their scalars tau), through cuSOLVER's geqrf in the
// input's precision, one matrix at a time, with the CPU op's argument rules
// and messages. `a` is batched column-major and `tau` contiguous
// [..., min(m, n)], as ATen returns them. devInfo (which only flags an illegal
// argument) stays on the device, so nothing synchronises.
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

template <typename T>
Error geqrf_batches(int device, cudaStream_t stream, int64_t m64, int64_t n64, int64_t batches, T* a, T* tau) {
  constexpr const char* op = "geqrf";
  KILN_ASSIGN_OR_RETURN(int m, solver_dim(m64, op));
  KILN_ASSIGN_OR_RETURN(int n, solver_dim(n64, op));
  const int64_t k = std::min(m64, n64);
  KILN_ASSIGN_OR_RETURN(const CusolverApi* api, cusolver());
  KILN_ASSIGN_OR_RETURN(cusolverDnHandle_t handle, cusolver_handle(*api, device));
  KILN_RETURN_IF_ERROR(cusolver_status(api->set_stream(handle, stream), "cusolverDnSetStream"));
  int lwork = 0;
  cusolverStatus_t status;
  if constexpr (std::is_same_v<T, float>) status = api->sgeqrf_size(handle, m, n, a, m, &lwork);
  else if constexpr (std::is_same_v<T, double>) status = api->dgeqrf_size(handle, m, n, a, m, &lwork);
  else if constexpr (std::is_same_v<T, cuComplex>) status = api->cgeqrf_size(handle, m, n, a, m, &lwork);
  else status = api->zgeqrf_size(handle, m, n, a, m, &lwork);
  KILN_RETURN_IF_ERROR(cusolver_status(status, "cusolverDn<t>geqrf_bufferSize"));
  lwork = std::max(lwork, 1);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer work,
                        DeviceBuffer::allocate(static_cast<size_t>(lwork) * sizeof(T), device, stream));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer info, DeviceBuffer::allocate(sizeof(int), device, stream));
  T* w = static_cast<T*>(work.get());
  int* dev_info = static_cast<int*>(info.get());
  for (int64_t b = 0; b < batches; ++b) {
    T* ab = a + b * m64 * n64;
    T* tb = tau + b * k;
    if constexpr (std::is_same_v<T, float>) status = api->sgeqrf(handle, m, n, ab, m, tb, w, lwork, dev_info);
    else if constexpr (std::is_same_v<T, double>) status = api->dgeqrf(handle, m, n, ab, m, tb, w, lwork, dev_info);
    else if constexpr (std::is_same_v<T, cuComplex>) status = api->cgeqrf(handle, m, n, ab, m, tb, w, lwork, dev_info);
    else status = api->zgeqrf(handle, m, n, ab, m, tb, w, lwork, dev_info);
    KILN_RETURN_IF_ERROR(cusolver_status(status, "cusolverDn<t>geqrf"));
  }
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_geqrf(AtenTensorHandle self, AtenTensorHandle* ret0,
                                                      AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda_geqrf", [&]() -> Error {
    constexpr const char* op = "geqrf";
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef input, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::matrix_batch_arg(input.sizes, op, "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lapack_dtype_arg(input.dtype, op, "self"));
    const std::vector<int64_t> batch = batch_sizes(input.sizes);
    const int64_t m = input.sizes[input.sizes.size() - 2];
    const int64_t n = input.sizes.back();
    const int64_t k = std::min(m, n);
    const int64_t batches = product(batch);
    const int device = input.device_index;
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    const cudaStream_t stream = current_stream(device);
    KILN_ASSIGN_OR_RETURN(OwnedHandle a_out, new_column_major(batch, m, n, input.dtype, device));
    std::vector<int64_t> tau_sizes = batch;
    tau_sizes.push_back(k);
    KILN_ASSIGN_OR_RETURN(OwnedHandle tau_out, new_contiguous(tau_sizes, input.dtype, device));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(a_out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef tau, read_tensor(tau_out.get(), "ret1"));
    KILN_RETURN_IF_ERROR(copy_broadcast(input, "self", a.data, a.sizes, a.strides, stream));
    if (k > 0 && batches > 0) {
      KILN_RETURN_IF_ERROR(visit_solver_type(input.dtype, op, "self", [&](auto tag) -> Error {
        using T = decltype(tag);
        return geqrf_batches<T>(device, stream, m, n, batches, static_cast<T*>(a.data), static_cast<T*>(tau.data));
      }));
    }
    KILN_RETURN_IF_ERROR(return_handle(a_out, ret0, "ret0"));
    return return_handle(tau_out, ret1, "ret1");
  });
}

}  // extern "C"
