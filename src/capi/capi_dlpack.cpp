// DLPack interchange: kiln_tensor_from_dlpack adopts a DLManagedTensor without
// copying; kiln_tensor_to_dlpack exports a kiln tensor as one. Uses the
// system's DLPack 0.6 header (unversioned DLManagedTensor), which is what the
// legacy "dltensor" capsule protocol of numpy and PyTorch passes.
#include <dlpack/dlpack.h>

#include <optional>
#include <string>
#include <vector>

#include "capi/capi_internal.h"

namespace {

using kiln::DType;
using kiln::Error;

// Type codes newer than DLPack 0.6 (later DLPack releases define them with
// these values; the installed 0.6 header does not name them yet).
constexpr uint8_t kDLBoolCode = 6;
constexpr uint8_t kDLFloat8E4M3FnCode = 10;
constexpr uint8_t kDLFloat8E5M2Code = 12;

// DLPack device codes must keep their published values.
static_assert(kDLCPU == 1 && kDLCUDA == 2);

struct DTypeMapping {
  DType dtype;
  uint8_t code;
  uint8_t bits;
};

constexpr DTypeMapping kDTypeMappings[] = {
    {DType::UInt8, kDLUInt, 8},       {DType::UInt16, kDLUInt, 16},    {DType::UInt32, kDLUInt, 32},
    {DType::UInt64, kDLUInt, 64},     {DType::Int8, kDLInt, 8},        {DType::Int16, kDLInt, 16},
    {DType::Int32, kDLInt, 32},       {DType::Int64, kDLInt, 64},      {DType::Float16, kDLFloat, 16},
    {DType::Float32, kDLFloat, 32},   {DType::Float64, kDLFloat, 64},  {DType::BFloat16, kDLBfloat, 16},
    {DType::Bool, kDLBoolCode, 8},    {DType::Float8_e4m3fn, kDLFloat8E4M3FnCode, 8},
    {DType::Float8_e5m2, kDLFloat8E5M2Code, 8}, {DType::Complex64, kDLComplex, 64},
    {DType::Complex128, kDLComplex, 128},
};

std::optional<DType> dtype_from_dlpack(DLDataType type) {
  if (type.lanes != 1) return std::nullopt;
  for (const auto& m : kDTypeMappings)
    if (m.code == type.code && m.bits == type.bits) return m.dtype;
  return std::nullopt;
}

std::optional<DLDataType> dtype_to_dlpack(DType dtype) {
  for (const auto& m : kDTypeMappings)
    if (m.dtype == dtype) return DLDataType{m.code, m.bits, 1};
  return std::nullopt;
}

// What a DLManagedTensor exported by Kiln points into: the tensor (holding a
// storage reference) and the shape/stride arrays DLTensor borrows.
struct ExportContext {
  kiln::Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
};

void delete_export(DLManagedTensor* self) noexcept {
  if (self) delete static_cast<ExportContext*>(self->manager_ctx);
}

// DLPack >= 1.0's versioned managed tensor, in the published layout (the
// installed 0.6 header predates it).
struct DLPackVersionV1 {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersionedV1 {
  DLPackVersionV1 version;
  void* manager_ctx;  // the wrapped unversioned DLManagedTensor
  void (*deleter)(DLManagedTensorVersionedV1* self);
  uint64_t flags;  // 0: writable, not a copy
  DLTensor dl_tensor;
};

void delete_versioned(DLManagedTensorVersionedV1* self) noexcept {
  if (!self) return;
  auto* wrapped = static_cast<DLManagedTensor*>(self->manager_ctx);
  if (wrapped && wrapped->deleter) wrapped->deleter(wrapped);
  delete self;
}

}  // namespace

extern "C" {

kiln_status_t kiln_tensor_from_dlpack(void* dl_managed_tensor, kiln_tensor_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(dl_managed_tensor);
    KILN_CAPI_REQUIRE(out);
    auto* managed = static_cast<DLManagedTensor*>(dl_managed_tensor);
    const DLTensor& dl = managed->dl_tensor;
    const std::string where = std::string(fn) + ": ";

    kiln::Device device;
    if (dl.device.device_type == kDLCPU) {
      device = {kiln::DeviceType::CPU, 0};
    } else if (dl.device.device_type == kDLCUDA) {
      if (dl.device.device_id < 0)
        return kiln::set_error(Error::InvalidArgument,
                               where + "negative CUDA device id " + std::to_string(dl.device.device_id));
      device = {kiln::DeviceType::CUDA, dl.device.device_id};
    } else {
      return kiln::set_error(Error::NotSupported, where + "DLPack device type " +
                                                      std::to_string(static_cast<int>(dl.device.device_type)) +
                                                      " is not supported (only kDLCPU and kDLCUDA)");
    }

    const std::optional<DType> dtype = dtype_from_dlpack(dl.dtype);
    if (!dtype)
      return kiln::set_error(Error::NotSupported, where + "DLPack dtype (code " + std::to_string(dl.dtype.code) +
                                                      ", bits " + std::to_string(dl.dtype.bits) + ", lanes " +
                                                      std::to_string(dl.dtype.lanes) + ") has no Kiln dtype");
    if (dl.ndim < 0)
      return kiln::set_error(Error::InvalidArgument, where + "negative ndim " + std::to_string(dl.ndim));
    const auto ndim = static_cast<size_t>(dl.ndim);
    if (ndim > 0 && dl.shape == nullptr)
      return kiln::set_error(Error::InvalidArgument, where + "shape is NULL but ndim is " + std::to_string(ndim));

    std::vector<int64_t> sizes(dl.shape, dl.shape + ndim);
    std::vector<int64_t> strides;
    if (dl.strides) {
      strides.assign(dl.strides, dl.strides + ndim);
      for (size_t i = 0; i < ndim; ++i)
        if (strides[i] < 0 && sizes[i] > 1)
          return kiln::set_error(Error::NotSupported, where + "negative stride " + std::to_string(strides[i]) +
                                                          " in dimension " + std::to_string(i) +
                                                          " (Kiln tensors need non-negative strides; copy first)");
        else if (strides[i] < 0)
          strides[i] = 0;  // A stride over a dimension of size <= 1 is never used.
    } else {
      strides = kiln::contiguous_strides(sizes);
    }
    void* data = dl.data ? static_cast<char*>(dl.data) + dl.byte_offset : nullptr;

    // Handle first: after from_blob succeeds the storage owns `managed`, and
    // nothing may fail between that and handing the tensor out.
    auto handle = std::make_unique<kiln_tensor_t>();
    kiln::Storage::Deleter deleter = [managed](void*) {
      if (managed->deleter) managed->deleter(managed);
    };
    KILN_ASSIGN_OR_RETURN(handle->tensor,
                          kiln::Tensor::from_blob(data, sizes, strides, *dtype, device, std::move(deleter)));
    *out = handle.release();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_to_dlpack(const kiln_tensor_t* tensor, void** dl_managed_tensor_out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(dl_managed_tensor_out);
    const kiln::Tensor& source = tensor->tensor;
    if (!source.defined())
      return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": tensor is undefined");
    const std::optional<DLDataType> dl_dtype = dtype_to_dlpack(source.dtype());
    if (!dl_dtype)
      return kiln::set_error(Error::NotSupported, std::string(fn) + ": dtype " + kiln::dtype_name(source.dtype()) +
                                                      " has no DLPack equivalent");
    DLDevice dl_device{};
    switch (source.device().type) {
      case kiln::DeviceType::CPU: dl_device = {kDLCPU, 0}; break;
      case kiln::DeviceType::CUDA: dl_device = {kDLCUDA, source.device().index}; break;
      default:
        return kiln::set_error(Error::NotSupported, std::string(fn) + ": device " +
                                                        kiln::device_string(source.device()) +
                                                        " has no DLPack equivalent supported by Kiln");
    }

    auto context = std::make_unique<ExportContext>();
    context->tensor = source;  // one more storage reference, owned by the export
    context->shape = source.sizes();
    context->strides = source.strides();
    DLTensor& dl = context->managed.dl_tensor;
    dl.data = source.data_ptr();
    dl.device = dl_device;
    dl.ndim = static_cast<int>(context->shape.size());
    dl.dtype = *dl_dtype;
    dl.shape = context->shape.data();
    dl.strides = context->strides.data();
    dl.byte_offset = 0;
    context->managed.manager_ctx = context.get();
    context->managed.deleter = &delete_export;
    *dl_managed_tensor_out = &context.release()->managed;
    return Error::Ok;
  });
}

kiln_status_t kiln_dlpack_to_versioned(void* dl_managed_tensor, void** dl_managed_tensor_versioned_out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(dl_managed_tensor);
    KILN_CAPI_REQUIRE(dl_managed_tensor_versioned_out);
    auto* wrapped = static_cast<DLManagedTensor*>(dl_managed_tensor);
    auto* versioned = new DLManagedTensorVersionedV1{{1, 0}, wrapped, &delete_versioned, 0, wrapped->dl_tensor};
    *dl_managed_tensor_versioned_out = versioned;
    return Error::Ok;
  });
}

}  // extern "C"
