// Argument checks and result plumbing shared by the CPU fallback ops: each
// check names the argument it refuses, so a model's error says which input of
// which op was wrong.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shims/common/layout_util.h"
#include "shims/common/op_util.h"
#include "shims/common/shim_util.h"

namespace kiln::cpu {

using aoti::optional_dtype_arg;
using aoti::reduced_sizes;
using aoti::retyped_view;
using aoti::return_tensor;
using aoti::wrap_dim;

/// The defined CPU tensor behind `handle`, or an error naming argument `name`.
inline Result<Tensor*> cpu_tensor_arg(AtenTensorHandle handle, const char* name) {
  return aoti::device_tensor_arg(handle, name, DeviceType::CPU);
}

/// An optional tensor argument (Tensor? in the schema, passed as a pointer to
/// a handle): nullptr when absent, else as cpu_tensor_arg.
inline Result<Tensor*> optional_cpu_tensor_arg(const AtenTensorHandle* handle, const char* name) {
  if (handle == nullptr || *handle == nullptr) return static_cast<Tensor*>(nullptr);
  return cpu_tensor_arg(*handle, name);
}

/// Error unless `t` has dtype `dtype`.
inline Error same_dtype(const Tensor& t, DType dtype, const char* name) {
  if (t.dtype() != dtype)
    return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype()) + ", expected " +
                         dtype_name(dtype));
  return Error::Ok;
}



/// A new contiguous CPU tensor, or an out-of-memory error.
inline Result<Tensor> new_cpu_tensor(std::span<const int64_t> sizes, DType dtype) {
  return Tensor::empty(sizes, dtype, Device{DeviceType::CPU, 0});
}


/// A new CPU tensor shaped like `like` with ATen's empty_like strides (the
/// same strides when `like` is dense, else dense in its memory order).
inline Result<Tensor> new_cpu_tensor_like(const Tensor& like, DType dtype) {
  const std::vector<int64_t> strides = aoti::strides_like(like.sizes(), like.strides());
  return Tensor::empty_strided(like.sizes(), strides, dtype, Device{DeviceType::CPU, 0});
}

/// `t` viewed with `sizes` by ATen's broadcasting (trailing dimensions
/// aligned, size-1 dimensions repeated with stride 0), or an error naming it.
inline Result<Tensor> broadcast_view(const Tensor& t, std::span<const int64_t> sizes, const char* name) {
  if (t.dim() > static_cast<int64_t>(sizes.size()))
    return aoti::invalid(std::string("argument '") + name + "' " + aoti::shape_string(t.sizes()) +
                         " does not broadcast to " + aoti::shape_string(sizes));
  std::vector<int64_t> strides(sizes.size(), 0);
  const size_t lead = sizes.size() - t.sizes().size();
  for (size_t i = 0; i < t.sizes().size(); ++i) {
    if (t.sizes()[i] == sizes[lead + i]) {
      strides[lead + i] = t.strides()[i];
    } else if (t.sizes()[i] != 1) {
      return aoti::invalid(std::string("argument '") + name + "' " + aoti::shape_string(t.sizes()) +
                           " does not broadcast to " + aoti::shape_string(sizes));
    }
  }
  return Tensor(t.storage(), t.dtype(), {sizes.begin(), sizes.end()}, strides, t.storage_offset());
}

/// Error unless `out` has exactly `sizes` (an out= argument the model sized).
inline Error expect_shape(const Tensor& out, std::span<const int64_t> sizes, const char* name) {
  if (std::vector<int64_t>(sizes.begin(), sizes.end()) != out.sizes())
    return aoti::invalid(std::string("argument '") + name + "' has shape " + aoti::shape_string(out.sizes()) +
                         ", expected " + aoti::shape_string(sizes));
  return Error::Ok;
}

/// The TensorOptions arguments of a factory op (dtype, layout, device,
/// pin_memory, each nullable): the dtype (`fallback` when absent), or an
/// error unless layout is strided, the device the CPU and pin_memory false.
inline Result<DType> factory_options(const int32_t* dtype, const int32_t* layout, const int32_t* device,
                                     const int32_t* pin_memory, DType fallback) {
  KILN_ASSIGN_OR_RETURN(std::optional<DType> dt, optional_dtype_arg(dtype, "dtype"));
  if (layout != nullptr && *layout != 0)
    return aoti::invalid("argument 'layout' is " + std::to_string(*layout) + ", only strided (0) is supported");
  if (device != nullptr && *device != static_cast<int32_t>(DeviceType::CPU))
    return aoti::invalid("argument 'device' is device type " + std::to_string(*device) + ", expected cpu");
  if (pin_memory != nullptr && *pin_memory != 0)
    return aoti::invalid("argument 'pin_memory' is true, which a CPU fallback cannot provide");
  return dt ? *dt : fallback;
}


}  // namespace kiln::cpu
