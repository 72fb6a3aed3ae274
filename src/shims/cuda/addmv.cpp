// aoti_torch_cuda_addmv: beta * self + alpha * (mat @ vec), on matmul.cpp's
// products. The result (n,) is computed as the one-row product
// vec^T (1, k) @ mat^T (k, n): with a row-major mat that is the GEMV kernel's
// case (a transposed row-major weight), and self becomes a row bias that the
// product reads in place. As ATen's CUDA kernel: one dtype throughout
// (float16, bfloat16, float32, float64, complex64, complex128), self
// broadcasts to (n,), with beta == 0 self is checked but never read (its NaNs
// do not propagate), and k == 0 leaves beta * self. Returns a new contiguous
// tensor the caller owns.
#include <string>
#include <vector>

#include "shims/common/product_args.h"
#include "shims/common/shim_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/matmul.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_addmv(AtenTensorHandle self, AtenTensorHandle mat,
                                                      AtenTensorHandle vec, double beta, double alpha,
                                                      AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_addmv", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(const TensorRef s, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(const TensorRef m, read_tensor(mat, "mat"));
    KILN_ASSIGN_OR_RETURN(const TensorRef v, read_tensor(vec, "vec"));
    KILN_RETURN_IF_ERROR(
        aoti::product::matrix_vector({m.dtype, m.sizes, Device{DeviceType::CUDA, m.device_index}},
                                     {v.dtype, v.sizes, Device{DeviceType::CUDA, v.device_index}}));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(m, s, "mat", "self"));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(v, s, "vec", "self"));
    KILN_RETURN_IF_ERROR(check_product_dtype(s.dtype));
    const int64_t n = m.sizes[0], k = m.sizes[1];
    const std::vector<int64_t> sizes{n};
    KILN_RETURN_IF_ERROR(aoti::product::broadcasts_to(s.sizes, sizes, "self"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(sizes, s.dtype, s.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(result.get(), "ret0"));

    // The result as a (1, n) row, vec as a (1, k) row, mat transposed (k, n):
    // views of the same memory, no copies.
    o.handle = nullptr;
    o.sizes = {1, n};
    o.strides = {n, 1};
    TensorRef row = v;
    row.handle = nullptr;
    row.sizes = {1, k};
    row.strides = {k * v.strides[0], v.strides[0]};
    TensorRef mt = m;
    mt.handle = nullptr;
    mt.sizes = {k, n};
    mt.strides = {m.strides[1], m.strides[0]};
    KILN_RETURN_IF_ERROR(addmm_into(o, self, row, mt, beta, alpha));
    return return_handle(result, ret0, "ret0");
  });
}

}  // extern "C"
