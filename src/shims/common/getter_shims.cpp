// Getters, item_* (tensor -> scalar) and scalar_to_tensor_* (scalar -> tensor).
// Pointers handed out (sizes, strides, data) are borrowed from the Tensor
// behind the handle and stay valid until that handle is deleted.
#include <cstring>
#include <string>

#include "shims/common/element_convert.h"
#include "shims/common/shim_util.h"
#include "core/half_float.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

// Runs `read(tensor)` writing through the non-null `out`; the tensor may be
// undefined only where `allow_undefined`.
template <typename T, typename Read>
AOTITorchError getter(const char* fn, AtenTensorHandle h, T* out, Read read, bool allow_undefined = false) {
  return guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(out, "ret"));
    Tensor* t = from_handle(h);
    if (t == nullptr) return invalid("argument 'tensor' is a null tensor handle");
    if (!allow_undefined && !t->defined()) return invalid("argument 'tensor' is an undefined tensor");
    *out = read(*t);
    return Error::Ok;
  });
}

// Wraps a dimension index the way ATen does (negative counts from the end).
Result<size_t> dim_index(const Tensor& t, int64_t d) {
  const int64_t n = t.dim();
  const int64_t w = d < 0 ? d + n : d;
  if (w < 0 || w >= n)
    return invalid("dimension " + std::to_string(d) + " out of range for a " + std::to_string(n) + "-d tensor");
  return static_cast<size_t>(w);
}

// The single element of `h` as a Scalar (copied to the host if needed).
Result<Scalar> single_element(AtenTensorHandle h) {
  KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(h, "tensor"));
  if (t->numel() != 1)
    return invalid("item() needs a tensor with one element, got " + t->describe());
  if (!convertible(t->dtype()))
    return set_error(Error::NotSupported, std::string("item() of dtype ") + dtype_name(t->dtype()));
  alignas(16) unsigned char buf[16] = {};
  if (t->device().is_cpu()) {
    std::memcpy(buf, t->data_ptr(), element_size(t->dtype()));
  } else {
    const std::vector<int64_t> one(t->sizes().size(), 1);
    KILN_ASSIGN_OR_RETURN(Tensor host, Tensor::from_blob(buf, t->sizes(), one, t->dtype()));
    KILN_RETURN_IF_ERROR(copy_tensor(host, *t));
  }
  return load_scalar(buf, t->dtype());
}

template <typename T>
AOTITorchError item(const char* fn, AtenTensorHandle h, T* out, DType as) {
  return guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(out, "ret_value"));
    KILN_ASSIGN_OR_RETURN(Scalar s, single_element(h));
    T value{};
    store_scalar(&value, as, s);
    *out = value;
    return Error::Ok;
  });
}

template <typename T>
AOTITorchError scalar_to_tensor(const char* fn, T value, DType dtype, AtenTensorHandle* ret) {
  return guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret, "ret_new_tensor"));
    KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::empty({}, dtype));
    std::memcpy(t.data_ptr(), &value, sizeof value);
    AtenTensorHandle handle = new_handle(std::move(t));
    if (handle == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
    *ret = handle;
    return Error::Ok;
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr) {
  return getter("aoti_torch_get_data_ptr", tensor, ret_data_ptr, [](const Tensor& t) { return t.data_ptr(); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size) {
  return getter("aoti_torch_get_storage_size", tensor, ret_size,
                [](const Tensor& t) { return static_cast<int64_t>(t.storage()->nbytes()); });
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  return getter("aoti_torch_get_storage_numel", tensor, ret_numel, [](const Tensor& t) {
    return static_cast<int64_t>(t.storage()->nbytes() / element_size(t.dtype()));
  });
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim) {
  return getter("aoti_torch_get_dim", tensor, ret_dim, [](const Tensor& t) { return t.dim(); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel) {
  return getter("aoti_torch_get_numel", tensor, ret_numel, [](const Tensor& t) { return t.numel(); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes) {
  // The ABI wants a mutable pointer; the model only reads through it.
  return getter("aoti_torch_get_sizes", tensor, ret_sizes,
                [](const Tensor& t) { return const_cast<int64_t*>(t.sizes().data()); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides) {
  return getter("aoti_torch_get_strides", tensor, ret_strides,
                [](const Tensor& t) { return const_cast<int64_t*>(t.strides().data()); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size) {
  return guarded("aoti_torch_get_size", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret_size, "ret_size"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(tensor, "tensor"));
    KILN_ASSIGN_OR_RETURN(size_t i, dim_index(*t, d));
    *ret_size = t->sizes()[i];
    return Error::Ok;
  });
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride) {
  return guarded("aoti_torch_get_stride", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret_stride, "ret_stride"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(tensor, "tensor"));
    KILN_ASSIGN_OR_RETURN(size_t i, dim_index(*t, d));
    *ret_stride = t->strides()[i];
    return Error::Ok;
  });
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype) {
  return getter("aoti_torch_get_dtype", tensor, ret_dtype,
                [](const Tensor& t) { return static_cast<int32_t>(t.dtype()); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type) {
  return getter("aoti_torch_get_device_type", tensor, ret_device_type,
                [](const Tensor& t) { return static_cast<int32_t>(t.device().type); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index) {
  // c10 reports -1 (no index) for CPU tensors.
  return getter("aoti_torch_get_device_index", tensor, ret_device_index,
                [](const Tensor& t) { return t.device().is_cpu() ? int32_t{-1} : t.device().index; }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout) {
  return getter("aoti_torch_get_layout", tensor, ret_layout, [](const Tensor&) { return int32_t{0}; }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset) {
  return getter("aoti_torch_get_storage_offset", tensor, ret_storage_offset,
                [](const Tensor& t) { return t.storage_offset(); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous) {
  return getter("aoti_torch_is_contiguous", tensor, ret_is_contiguous,
                [](const Tensor& t) { return t.is_contiguous(); }, true);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined) {
  return getter("aoti_torch_is_defined", tensor, ret_is_defined, [](const Tensor& t) { return t.defined(); }, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_float16(AtenTensorHandle t, uint16_t* v) {
  return item("aoti_torch_item_float16", t, v, DType::Float16);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle t, uint16_t* v) {
  return item("aoti_torch_item_bfloat16", t, v, DType::BFloat16);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_float32(AtenTensorHandle t, float* v) {
  return item("aoti_torch_item_float32", t, v, DType::Float32);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_float64(AtenTensorHandle t, double* v) {
  return item("aoti_torch_item_float64", t, v, DType::Float64);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint8(AtenTensorHandle t, uint8_t* v) {
  return item("aoti_torch_item_uint8", t, v, DType::UInt8);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint16(AtenTensorHandle t, uint16_t* v) {
  return item("aoti_torch_item_uint16", t, v, DType::UInt16);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint32(AtenTensorHandle t, uint32_t* v) {
  return item("aoti_torch_item_uint32", t, v, DType::UInt32);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_uint64(AtenTensorHandle t, uint64_t* v) {
  return item("aoti_torch_item_uint64", t, v, DType::UInt64);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int8(AtenTensorHandle t, int8_t* v) {
  return item("aoti_torch_item_int8", t, v, DType::Int8);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int16(AtenTensorHandle t, int16_t* v) {
  return item("aoti_torch_item_int16", t, v, DType::Int16);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int32(AtenTensorHandle t, int32_t* v) {
  return item("aoti_torch_item_int32", t, v, DType::Int32);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_int64(AtenTensorHandle t, int64_t* v) {
  return item("aoti_torch_item_int64", t, v, DType::Int64);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle t, bool* v) {
  return item("aoti_torch_item_bool", t, v, DType::Bool);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_float32", value, DType::Float32, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_float64", value, DType::Float64, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_uint8", value, DType::UInt8, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_uint16", value, DType::UInt16, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_uint32", value, DType::UInt32, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_uint64", value, DType::UInt64, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_int8", value, DType::Int8, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_int16", value, DType::Int16, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_int32", value, DType::Int32, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret) {
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_int64", value, DType::Int64, ret);
}
KILN_SHIM_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret) {
  // Stored as one byte 0/1, like c10's bool.
  return scalar_to_tensor("aoti_torch_scalar_to_tensor_bool", static_cast<uint8_t>(value ? 1 : 0), DType::Bool, ret);
}

}  // extern "C"
