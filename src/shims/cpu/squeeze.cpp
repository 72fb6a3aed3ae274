// aoti_torch_cpu_squeeze_dim: a view without dimension `dim` when its size is
// 1, else a view of the same shape; shares the input's storage as ATen's.
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_squeeze_dim(AtenTensorHandle self, int64_t dim,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_squeeze_dim", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, t->dim()));
    std::vector<int64_t> sizes = t->sizes(), strides = t->strides();
    if (t->dim() > 0 && sizes[static_cast<size_t>(d)] == 1) {
      sizes.erase(sizes.begin() + d);
      strides.erase(strides.begin() + d);
    }
    KILN_ASSIGN_OR_RETURN(Tensor v, t->make_view(sizes, strides, t->storage_offset()));
    return return_tensor(std::move(v), ret0, "ret0");
  });
}

}  // extern "C"
