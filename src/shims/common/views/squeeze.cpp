// aoti_torch_cpu_squeeze_dim: a view without dimension `dim` when its size is
// 1, else a view of the same shape; shares the input's storage as ATen's.
#include "shims/common/views/view_shims.h"
#include "shims/common/op_util.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

template <DeviceType kDevice>
AOTITorchError squeeze_dim_on(const char* fn, AtenTensorHandle self, int64_t dim,
                                                           AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
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

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_squeeze_dim(AtenTensorHandle self, int64_t dim,
                                                           AtenTensorHandle* ret0) {
  return squeeze_dim_on<DeviceType::CPU>("aoti_torch_cpu_squeeze_dim", self, dim, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_squeeze_dim(AtenTensorHandle self, int64_t dim,
                                                           AtenTensorHandle* ret0) {
  return squeeze_dim_on<DeviceType::CUDA>("aoti_torch_cuda_squeeze_dim", self, dim, ret0);
}

}  // extern "C"
