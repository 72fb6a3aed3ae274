// aoti_torch_cuda_mm_out / bmm_out / addmm_out: the products themselves are
// matmul.cpp's (cuBLASLt, or the GEMV kernel for few rows).
#include "shims/common/shim_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/matmul.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2) {
  return aoti::guarded("aoti_torch_cuda_mm_out", [&]() -> Error {
    TensorRef o, a, b;
    KILN_RETURN_IF_ERROR(read_product(out, self, mat2, "self", "mat2", 2, o, a, b));
    return matmul_into(o, a, b, 1.0, 0.0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                        AtenTensorHandle mat2) {
  return aoti::guarded("aoti_torch_cuda_bmm_out", [&]() -> Error {
    TensorRef o, a, b;
    KILN_RETURN_IF_ERROR(read_product(out, self, mat2, "self", "mat2", 3, o, a, b));
    return matmul_into(o, a, b, 1.0, 0.0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                          AtenTensorHandle mat1, AtenTensorHandle mat2,
                                                          double beta, double alpha) {
  return aoti::guarded("aoti_torch_cuda_addmm_out", [&]() -> Error {
    TensorRef o, a, b;
    KILN_RETURN_IF_ERROR(read_product(out, mat1, mat2, "mat1", "mat2", 2, o, a, b));
    return addmm_into(o, self, a, b, beta, alpha);
  });
}

}  // extern "C"
