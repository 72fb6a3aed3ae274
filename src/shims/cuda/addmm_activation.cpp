// aoti_torch_cuda__addmm_activation: relu or GELU of beta * self + alpha *
// (mat1 @ mat2), as ATen's CUDA kernel (addmm_activation_out_cuda). ATen
// computes it in one cuBLASLt call with a bias-and-activation epilogue
// (RELU_BIAS or GELU_BIAS) when beta is 1, self a contiguous row of
// mat2.size(1) values, the dtype real floating and every size of mat1 and
// mat2 above 1; otherwise it runs addmm and then relu_ or
// gelu_(approximate="tanh"). Kiln takes the same two routes (the second also
// where cuBLASLt has no algorithm with the epilogue, as ATen's fallback), so
// GELU is the tanh approximation either way, unlike the CPU kernel's erf form.
// The result is a new contiguous tensor of mat1's dtype, as ATen's.
#include <string>

#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/kernels/activation_kernel.h"
#include "kiln/log.h"
#include "shims/common/shim_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/matmul.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

std::string matrix_shape(const TensorRef& t) {
  return std::to_string(t.sizes[0]) + "x" + std::to_string(t.sizes[1]);
}

Error check_arguments(const TensorRef& s, const TensorRef& a, const TensorRef& b) {
  if (a.dim() != 2)
    return aoti::invalid("mat1 must be a matrix, got " + std::to_string(a.dim()) + "-D tensor");
  if (b.dim() != 2)
    return aoti::invalid("mat2 must be a matrix, got " + std::to_string(b.dim()) + "-D tensor");
  if (a.sizes[1] != b.sizes[0])
    return aoti::invalid("mat1 and mat2 shapes cannot be multiplied (" + matrix_shape(a) + " and " +
                         matrix_shape(b) + ")");
  if (s.dtype != b.dtype || a.dtype != b.dtype)
    return aoti::invalid(std::string("self, mat1 and mat2 must have the same dtype, but got ") +
                         dtype_name(s.dtype) + ", " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  if (s.device_index != a.device_index || b.device_index != a.device_index)
    return aoti::invalid("self, mat1 and mat2 are on different CUDA devices (" +
                         std::to_string(s.device_index) + ", " + std::to_string(a.device_index) + ", " +
                         std::to_string(b.device_index) + ")");
  KILN_RETURN_IF_ERROR(check_product_dtype(a.dtype));
  if (a.dtype == DType::Complex64 || a.dtype == DType::Complex128)
    return set_error(Error::NotSupported, std::string("_addmm_activation of dtype ") + dtype_name(a.dtype) +
                                              " on CUDA: relu and GELU are not defined for complex numbers "
                                              "(ATen's CUDA kernel refuses them too)");
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__addmm_activation(AtenTensorHandle self,
                                                                  AtenTensorHandle mat1,
                                                                  AtenTensorHandle mat2, double beta,
                                                                  double alpha, int32_t use_gelu,
                                                                  AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__addmm_activation", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef s, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(mat1, "mat1"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(mat2, "mat2"));
    KILN_RETURN_IF_ERROR(check_arguments(s, a, b));
    const int64_t M = a.sizes[0], K = a.sizes[1], N = b.sizes[1];
    const int64_t sizes[2] = {M, N};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, a.dtype, a.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    if (M == 0 || N == 0) return return_handle(out, ret0, "ret0");
    const Activation act = use_gelu != 0 ? Activation::GeluTanh : Activation::Relu;

    // ATen's conditions for the cuBLASLt epilogue (its isInputCompliesAddmmCudaLt).
    const bool bias_row = beta == 1.0 && s.dim() == 1 && s.sizes[0] == N && s.strides[0] == 1;
    if (bias_row && M > 1 && K > 1 && N > 1) {
      const Error fused = matmul_into(o, a, b, alpha, 1.0, RowBias{s.data, 1}, act);
      if (fused == Error::Ok) return return_handle(out, ret0, "ret0");
      if (fused != Error::NotSupported) return fused;
      KILN_LOG(Debug,
               "_addmm_activation on CUDA: " + last_error_message() + "; addmm, then the activation kernel");
    }
    KILN_RETURN_IF_ERROR(addmm_into(o, self, a, b, beta, alpha));
    ScopedDevice scoped(o.device_index);
    KILN_RETURN_IF_ERROR(scoped.status());
    KILN_RETURN_IF_ERROR(launch_activation(o.data, o.dtype, o.numel(), act, current_stream(o.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
