// Argument checks and result plumbing shared by fallback ops of every
// device, and by the device-neutral ops themselves (views, which only make
// new geometry over the same storage): each check names the argument it
// refuses, so a model's error says which input of which op was wrong.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shims/common/shim_util.h"

namespace kiln::aoti {

/// The defined tensor behind `handle` on a device of `type`, or an error
/// naming argument `name`.
inline Result<Tensor*> device_tensor_arg(AtenTensorHandle handle, const char* name, DeviceType type) {
  KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(handle, name));
  if (t->device().type != type)
    return invalid(std::string("argument '") + name + "' is on " + device_string(t->device()) + ", expected " +
                   device_type_name(type));
  return t;
}

/// An optional ScalarType argument (int32_t* in the ABI): nullopt when absent.
inline Result<std::optional<DType>> optional_dtype_arg(const int32_t* code, const char* name) {
  if (code == nullptr) return std::optional<DType>{};
  if (!is_known_dtype(*code))
    return invalid(std::string("argument '") + name + "' has unknown dtype code " + std::to_string(*code));
  return std::optional<DType>{static_cast<DType>(*code)};
}

/// `dim` wrapped into [0, rank) as ATen does (negative counts from the end; a
/// 0-d tensor accepts 0 and -1), or an error naming it.
inline Result<int64_t> wrap_dim(int64_t dim, int64_t rank, const char* name = "dim") {
  const int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    return invalid(std::string("argument '") + name + "' is " + std::to_string(dim) +
                         ", out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

/// Error unless `dtype` is an index dtype (int64 or int32).
inline Error index_dtype_check(DType dtype, const char* name) {
  if (dtype != DType::Int64 && dtype != DType::Int32)
    return invalid(std::string("argument '") + name + "' has dtype " + dtype_name(dtype) +
                   ", expected int64 or int32");
  return Error::Ok;
}

/// The error for index value `v` outside [0, size) of dimension `dim`.
inline Error index_out_of_bounds(int64_t v, int64_t size, int64_t dim, const char* name) {
  return invalid(std::string("argument '") + name + "': index " + std::to_string(v) +
                 " is out of bounds for dimension " + std::to_string(dim) + " with size " + std::to_string(size));
}

/// Hands `t` to the caller through return pointer `ret` (a new reference).
inline Error return_tensor(Tensor t, AtenTensorHandle* ret, const char* name) {
  KILN_RETURN_IF_ERROR(out_arg(ret, name));
  AtenTensorHandle h = new_handle(std::move(t));
  if (h == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
  *ret = h;
  return Error::Ok;
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
    return invalid("the view (offset " + std::to_string(storage_offset) + ", " + std::to_string(bytes) +
                         " bytes) reaches past its storage of " + std::to_string(t.storage()->nbytes()) + " bytes");
  return Tensor(t.storage(), dtype, std::vector<int64_t>(sizes.begin(), sizes.end()),
                std::vector<int64_t>(strides.begin(), strides.end()), storage_offset);
}

}  // namespace kiln::aoti
