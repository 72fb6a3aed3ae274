// aoti_torch_cpu_addmv: beta * self + alpha * (mat @ vec), a matrix-vector
// product through kiln::cpu::matmul with vec as a one-column matrix. As ATen:
// self broadcasts to (n,), one dtype throughout, and beta == 0 ignores self.
#include <vector>

#include "shims/common/product_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/matmul.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmv(AtenTensorHandle self, AtenTensorHandle mat, AtenTensorHandle vec,
                                                     double beta, double alpha, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_addmv", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(mat, "mat"));
    KILN_ASSIGN_OR_RETURN(Tensor * v, cpu_tensor_arg(vec, "vec"));
    KILN_RETURN_IF_ERROR(aoti::product::matrix_vector({a->dtype(), a->sizes(), a->device()},
                                                      {v->dtype(), v->sizes(), v->device()}));
    KILN_RETURN_IF_ERROR(same_dtype(*a, s->dtype(), "mat"));
    KILN_RETURN_IF_ERROR(same_dtype(*v, s->dtype(), "vec"));
    const int64_t n = a->size(0), m = a->size(1);
    const std::vector<int64_t> sizes{n};
    KILN_RETURN_IF_ERROR(aoti::product::broadcasts_to(s->sizes(), sizes, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor init1, broadcast_view(*s, sizes, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(sizes, s->dtype()));
    const Tensor out2(result.storage(), result.dtype(), {n, 1}, {1, 1}, 0);
    const Tensor init2(init1.storage(), init1.dtype(), {n, 1}, {init1.stride(0), 1}, init1.storage_offset());
    const Tensor col(v->storage(), v->dtype(), {m, 1}, {v->stride(0), 1}, v->storage_offset());
    KILN_RETURN_IF_ERROR(matmul(out2, &init2, *a, col, beta, alpha, 0));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
