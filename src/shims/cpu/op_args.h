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
#include "shims/common/shim_util.h"

namespace kiln::cpu {

/// The defined CPU tensor behind `handle`, or an error naming argument `name`.
inline Result<Tensor*> cpu_tensor_arg(AtenTensorHandle handle, const char* name) {
  KILN_ASSIGN_OR_RETURN(Tensor * t, aoti::tensor_arg(handle, name));
  if (!t->device().is_cpu())
    return aoti::invalid(std::string("argument '") + name + "' is on " + device_string(t->device()) +
                         ", expected cpu");
  return t;
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

/// An optional ScalarType argument (int32_t* in the ABI): nullopt when absent.
inline Result<std::optional<DType>> optional_dtype_arg(const int32_t* code, const char* name) {
  if (code == nullptr) return std::optional<DType>{};
  if (!is_known_dtype(*code))
    return aoti::invalid(std::string("argument '") + name + "' has unknown dtype code " + std::to_string(*code));
  return std::optional<DType>{static_cast<DType>(*code)};
}

/// `dim` wrapped into [0, rank) as ATen does (negative counts from the end; a
/// 0-d tensor accepts 0 and -1), or an error naming it.
inline Result<int64_t> wrap_dim(int64_t dim, int64_t rank, const char* name = "dim") {
  const int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    return aoti::invalid(std::string("argument '") + name + "' is " + std::to_string(dim) +
                         ", out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

/// A new contiguous CPU tensor, or an out-of-memory error.
inline Result<Tensor> new_cpu_tensor(std::span<const int64_t> sizes, DType dtype) {
  return Tensor::empty(sizes, dtype, Device{DeviceType::CPU, 0});
}

/// Hands `t` to the caller through return pointer `ret` (a new reference).
inline Error return_tensor(Tensor t, AtenTensorHandle* ret, const char* name) {
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret, name));
  AtenTensorHandle h = aoti::new_handle(std::move(t));
  if (h == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
  *ret = h;
  return Error::Ok;
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

/// The sizes of a reduction over `dim` (already wrapped): the dimension
/// dropped, or kept with size 1 under keepdim; a 0-d input gives 0-d.
inline std::vector<int64_t> reduced_sizes(std::span<const int64_t> sizes, int64_t dim, bool keepdim) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<int64_t>(d) != dim) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
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

/// A view of `t`'s storage with another dtype and geometry (offset and
/// strides in elements of `dtype`), or an error if it would reach outside the
/// storage. Tensor::make_view keeps the dtype; view_dtype, view_as_real and
/// view_as_complex reinterpret it.
inline Result<Tensor> retyped_view(const Tensor& t, DType dtype, std::span<const int64_t> sizes,
                                   std::span<const int64_t> strides, int64_t storage_offset) {
  KILN_ASSIGN_OR_RETURN(int64_t bytes, strided_extent_bytes(sizes, strides, dtype));
  const auto elem = static_cast<int64_t>(element_size(dtype));
  int64_t end = 0;
  if (storage_offset < 0 || (bytes > 0 && (__builtin_mul_overflow(storage_offset, elem, &end) ||
                                           __builtin_add_overflow(end, bytes, &end) ||
                                           end > static_cast<int64_t>(t.storage()->nbytes()))))
    return aoti::invalid("the view (offset " + std::to_string(storage_offset) + ", " + std::to_string(bytes) +
                         " bytes) reaches past its storage of " + std::to_string(t.storage()->nbytes()) + " bytes");
  return Tensor(t.storage(), dtype, std::vector<int64_t>(sizes.begin(), sizes.end()),
                std::vector<int64_t>(strides.begin(), strides.end()), storage_offset);
}

}  // namespace kiln::cpu
