// aoti_torch_cuda_triangular_solve: X with op(A) X = B for triangular A (upper
// or lower, op = transpose (not conjugated, as ATen) or not, unit diagonal or
// read), through cuBLAS's batched trsm in the input's precision, with the CPU
// op's argument rules and messages (shims/common/linalg_args.h). Like trsm
// (and ATen), a zero on the diagonal is not an error: the solution holds
// infinities and NaNs. Returns (solution, cloned_coefficient): B and A
// broadcast to their common batch shape, batched column-major as ATen's; the
// solve runs in place in the first, against the second.
#include <string>
#include <vector>

#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/linalg_util.h"

using namespace kiln;
using namespace kiln::cudadev;
using namespace kiln::cudadev::linalg;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_triangular_solve(AtenTensorHandle self, AtenTensorHandle A,
                                                                 int32_t upper, int32_t transpose,
                                                                 int32_t unitriangular, AtenTensorHandle* ret0,
                                                                 AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda_triangular_solve", [&]() -> Error {
    constexpr const char* op = "triangular_solve";
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef rhs, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef coeff, read_tensor(A, "A"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                          aoti::linalg::triangular_system_args(rhs.dtype, rhs.sizes, coeff.dtype, coeff.sizes, op,
                                                               "self", "A"));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(coeff, rhs, "A", "self"));
    KILN_RETURN_IF_ERROR(aoti::linalg::lapack_dtype_arg(rhs.dtype, op, "self"));
    const int64_t n = coeff.sizes.back();
    const int64_t k = rhs.sizes.back();
    const int device = rhs.device_index;
    ScopedDevice scoped(device);
    KILN_RETURN_IF_ERROR(scoped.status());
    const cudaStream_t stream = current_stream(device);
    KILN_ASSIGN_OR_RETURN(OwnedHandle solution, new_column_major(batch, n, k, rhs.dtype, device));
    KILN_ASSIGN_OR_RETURN(OwnedHandle clone, new_column_major(batch, n, n, coeff.dtype, device));
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(solution.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(clone.get(), "ret1"));
    KILN_RETURN_IF_ERROR(copy_broadcast(rhs, "self", x.data, x.sizes, x.strides, stream));
    KILN_RETURN_IF_ERROR(copy_broadcast(coeff, "A", a.data, a.sizes, a.strides, stream));
    KILN_RETURN_IF_ERROR(visit_solver_type(rhs.dtype, op, "self", [&](auto tag) -> Error {
      using T = decltype(tag);
      return batched_trsm<T>(device, stream, upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER,
                             transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
                             unitriangular ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, n, k, static_cast<T*>(a.data),
                             n * n, static_cast<T*>(x.data), n * k, product(batch), op);
    }));
    KILN_RETURN_IF_ERROR(return_handle(solution, ret0, "ret0"));
    return return_handle(clone, ret1, "ret1");
  });
}

}  // extern "C"
