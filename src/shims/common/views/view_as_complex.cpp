// aoti_torch_cpu_view_as_real, aoti_torch_cpu_view_as_complex: views that
// reinterpret complex elements as (real, imaginary) pairs and back, sharing
// the input's storage as ATen's. view_as_real appends a dimension of 2 with
// stride 1 and doubles the other strides and the offset; view_as_complex
// needs a last dimension of 2 with stride 1, and even strides and offset.
// (A float16 input would give complex32, which Kiln does not have.)
#include "shims/common/views/view_shims.h"
#include "shims/common/op_util.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

template <DeviceType kDevice>
AOTITorchError view_as_real_on(const char* fn, AtenTensorHandle self, AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    DType real;
    if (t->dtype() == DType::Complex64)
      real = DType::Float32;
    else if (t->dtype() == DType::Complex128)
      real = DType::Float64;
    else
      return invalid(
          std::string("view_as_real is only supported for complex tensors; argument 'self' has dtype ") +
          dtype_name(t->dtype()));
    std::vector<int64_t> sizes = t->sizes(), strides = t->strides();
    for (int64_t& s : strides) s *= 2;
    sizes.push_back(2);
    strides.push_back(1);
    KILN_ASSIGN_OR_RETURN(Tensor v, retyped_view(*t, real, sizes, strides, t->storage_offset() * 2));
    return return_tensor(std::move(v), ret0, "ret0");
  });
}

template <DeviceType kDevice>
AOTITorchError view_as_complex_on(const char* fn, AtenTensorHandle self,
                                                               AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    DType cplx;
    if (t->dtype() == DType::Float32)
      cplx = DType::Complex64;
    else if (t->dtype() == DType::Float64)
      cplx = DType::Complex128;
    else
      return invalid(
          std::string("view_as_complex takes float32 or float64; argument 'self' has dtype ") +
          dtype_name(t->dtype()));
    if (t->dim() == 0) return invalid("Input tensor must have one or more dimensions");
    if (t->sizes().back() != 2) return invalid("Tensor must have a last dimension of size 2");
    if (t->strides().back() != 1) return invalid("Tensor must have a last dimension with stride 1");
    std::vector<int64_t> sizes(t->sizes().begin(), t->sizes().end() - 1);
    std::vector<int64_t> strides(t->strides().begin(), t->strides().end() - 1);
    for (int64_t& s : strides) {
      if (s % 2 != 0)
        return invalid("Tensor must have a stride divisible by 2 for all but last dimension");
      s /= 2;
    }
    if (t->storage_offset() % 2 != 0)
      return invalid("Tensor must have a storage_offset divisible by 2");
    KILN_ASSIGN_OR_RETURN(Tensor v, retyped_view(*t, cplx, sizes, strides, t->storage_offset() / 2));
    return return_tensor(std::move(v), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return view_as_real_on<DeviceType::CPU>("aoti_torch_cpu_view_as_real", self, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return view_as_real_on<DeviceType::CUDA>("aoti_torch_cuda_view_as_real", self, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_view_as_complex(AtenTensorHandle self,
                                                               AtenTensorHandle* ret0) {
  return view_as_complex_on<DeviceType::CPU>("aoti_torch_cpu_view_as_complex", self, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_view_as_complex(AtenTensorHandle self,
                                                               AtenTensorHandle* ret0) {
  return view_as_complex_on<DeviceType::CUDA>("aoti_torch_cuda_view_as_complex", self, ret0);
}

}  // extern "C"
