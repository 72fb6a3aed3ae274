// aoti_torch_cpu_permute: a view with the dimensions reordered (sizes and
// strides permuted), sharing the input's storage as ATen's.
#include "shims/common/views/view_shims.h"
#include "shims/common/op_util.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

template <DeviceType kDevice>
AOTITorchError permute_on(const char* fn, AtenTensorHandle self, const int64_t* dims,
                                                       int64_t dims_len_, AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> order, int_array_arg(dims, dims_len_, "dims"));
    if (static_cast<int64_t>(order.size()) != t->dim())
      return invalid(
          "number of dimensions in the tensor input does not match the length of the desired "
          "ordering of dimensions i.e. input.dim() = " +
          std::to_string(t->dim()) + " is not equal to len(dims) = " + std::to_string(order.size()));
    std::vector<int64_t> sizes(order.size()), strides(order.size());
    std::vector<bool> seen(order.size(), false);
    for (size_t i = 0; i < order.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(order[i], t->dim(), "dims"));
      if (seen[static_cast<size_t>(d)]) return invalid("permute(): duplicate dims are not allowed.");
      seen[static_cast<size_t>(d)] = true;
      sizes[i] = t->size(d);
      strides[i] = t->stride(d);
    }
    KILN_ASSIGN_OR_RETURN(Tensor v, t->make_view(sizes, strides, t->storage_offset()));
    return return_tensor(std::move(v), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_permute(AtenTensorHandle self, const int64_t* dims,
                                                       int64_t dims_len_, AtenTensorHandle* ret0) {
  return permute_on<DeviceType::CPU>("aoti_torch_cpu_permute", self, dims, dims_len_, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_permute(AtenTensorHandle self, const int64_t* dims,
                                                       int64_t dims_len_, AtenTensorHandle* ret0) {
  return permute_on<DeviceType::CUDA>("aoti_torch_cuda_permute", self, dims, dims_len_, ret0);
}

}  // extern "C"
