// aoti_torch_cpu_view_dtype: the same bytes seen as another dtype, a view
// sharing the input's storage. With a different element size the last
// dimension (stride 1) is rescaled by the size ratio, as ATen: going to a
// smaller element multiplies it and the other strides and offset; going to a
// larger one needs them divisible by the ratio. A 0-d tensor can only change
// to a dtype of the same size.
#include "shims/common/views/view_shims.h"
#include "shims/common/op_util.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

template <DeviceType kDevice>
AOTITorchError view_dtype_on(const char* fn, AtenTensorHandle self, int32_t dtype,
                                                          AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> want, optional_dtype_arg(&dtype, "dtype"));
    const DType to = *want;
    const int64_t from_size = static_cast<int64_t>(element_size(t->dtype()));
    const int64_t to_size = static_cast<int64_t>(element_size(to));
    std::vector<int64_t> sizes = t->sizes(), strides = t->strides();
    int64_t offset = t->storage_offset();
    const std::string what = std::string("to view ") + dtype_name(t->dtype()) + " as " + dtype_name(to) +
                             " (different element sizes)";
    if (from_size != to_size) {
      if (t->dim() == 0) return invalid("self.dim() cannot be 0 " + what);
      if (strides.back() != 1)
        return invalid("self.stride(-1) must be 1 " + what + ", but got " +
                             std::to_string(strides.back()));
      if (from_size > to_size) {
        const int64_t r = from_size / to_size;
        sizes.back() *= r;
        for (size_t i = 0; i + 1 < strides.size(); ++i) strides[i] *= r;
        offset *= r;
      } else {
        const int64_t r = to_size / from_size;
        if (sizes.back() % r != 0)
          return invalid("self.size(-1) must be divisible by " + std::to_string(r) + " " + what +
                               ", but got " + std::to_string(sizes.back()));
        if (offset % r != 0)
          return invalid("self.storage_offset() must be divisible by " + std::to_string(r) + " " +
                               what + ", but got " + std::to_string(offset));
        for (size_t i = 0; i + 1 < strides.size(); ++i) {
          if (strides[i] % r != 0)
            return invalid("self.stride(" + std::to_string(i) + ") must be divisible by " +
                                 std::to_string(r) + " " + what + ", but got " + std::to_string(strides[i]));
          strides[i] /= r;
        }
        sizes.back() /= r;
        offset /= r;
      }
    }
    KILN_ASSIGN_OR_RETURN(Tensor v, retyped_view(*t, to, sizes, strides, offset));
    return return_tensor(std::move(v), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_dtype(AtenTensorHandle self, int32_t dtype,
                                                          AtenTensorHandle* ret0) {
  return view_dtype_on<DeviceType::CPU>("aoti_torch_cpu_view_dtype", self, dtype, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_view_dtype(AtenTensorHandle self, int32_t dtype,
                                                          AtenTensorHandle* ret0) {
  return view_dtype_on<DeviceType::CUDA>("aoti_torch_cuda_view_dtype", self, dtype, ret0);
}

}  // extern "C"
