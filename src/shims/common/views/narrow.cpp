// aoti_torch_cpu_narrow, aoti_torch_cpu_slice_Tensor: views of a range of
// one dimension, sharing the input's storage as ATen's. narrow takes start
// in [-size, size] (negative counts from the end) and a length that must fit;
// slice clamps start and end (absent: 0 and the end) into the dimension,
// negative values counting from the end, with a positive step.
#include <algorithm>
#include <limits>

#include "shims/common/views/view_shims.h"
#include "shims/common/op_util.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

Error slice_view(const Tensor& t, int64_t d, int64_t start, int64_t end, int64_t step,
                 AtenTensorHandle* ret0) {
  const int64_t size = t.size(d);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  std::vector<int64_t> sizes = t.sizes(), strides = t.strides();
  const int64_t n = end == start ? 0 : (end - start - 1) / step + 1;
  sizes[static_cast<size_t>(d)] = n;
  // With one element or none the stride is never used; skipping the product
  // keeps a huge step from overflowing it.
  if (n > 1 && __builtin_mul_overflow(strides[static_cast<size_t>(d)], step, &strides[static_cast<size_t>(d)]))
    return invalid("argument 'step' " + std::to_string(step) + " overflows the stride");
  KILN_ASSIGN_OR_RETURN(Tensor v, t.make_view(sizes, strides, t.storage_offset() + start * t.stride(d)));
  return return_tensor(std::move(v), ret0, "ret0");
}

}  // namespace

namespace {

template <DeviceType kDevice>
AOTITorchError narrow_on(const char* fn, AtenTensorHandle self, int64_t dim, int64_t start,
                                                      int64_t length, AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    if (t->dim() == 0) return invalid("narrow() cannot be applied to a 0-dim tensor.");
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, t->dim()));
    if (length < 0) return invalid("narrow(): length must be non-negative.");
    const int64_t size = t->size(d);
    if (start < -size || start > size)
      return invalid("argument 'start' out of range (expected to be in range of [" +
                           std::to_string(-size) + ", " + std::to_string(size) + "], but got " +
                           std::to_string(start) + ")");
    if (start < 0) start += size;
    if (start > size - length)
      return invalid("start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
                           ") exceeds dimension size (" + std::to_string(size) + ").");
    return slice_view(*t, d, start, start + length, 1, ret0);
  });
}

template <DeviceType kDevice>
AOTITorchError slice_Tensor_on(const char* fn, AtenTensorHandle self, int64_t dim,
                                                            int64_t* start, int64_t* end, int64_t step,
                                                            AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    if (t->dim() == 0) return invalid("slice() cannot be applied to a 0-dim tensor.");
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, t->dim()));
    if (step <= 0) return invalid("slice step must be positive, got " + std::to_string(step));
    return slice_view(*t, d, start ? *start : 0, end ? *end : std::numeric_limits<int64_t>::max(), step,
                      ret0);
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_narrow(AtenTensorHandle self, int64_t dim, int64_t start,
                                                      int64_t length, AtenTensorHandle* ret0) {
  return narrow_on<DeviceType::CPU>("aoti_torch_cpu_narrow", self, dim, start, length, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_narrow(AtenTensorHandle self, int64_t dim, int64_t start,
                                                      int64_t length, AtenTensorHandle* ret0) {
  return narrow_on<DeviceType::CUDA>("aoti_torch_cuda_narrow", self, dim, start, length, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_slice_Tensor(AtenTensorHandle self, int64_t dim,
                                                            int64_t* start, int64_t* end, int64_t step,
                                                            AtenTensorHandle* ret0) {
  return slice_Tensor_on<DeviceType::CPU>("aoti_torch_cpu_slice_Tensor", self, dim, start, end, step, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_slice_Tensor(AtenTensorHandle self, int64_t dim,
                                                            int64_t* start, int64_t* end, int64_t step,
                                                            AtenTensorHandle* ret0) {
  return slice_Tensor_on<DeviceType::CUDA>("aoti_torch_cuda_slice_Tensor", self, dim, start, end, step, ret0);
}

}  // extern "C"
