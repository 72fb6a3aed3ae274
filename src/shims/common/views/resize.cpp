// aoti_torch_{cpu,cuda}_resize_, _resize_as_, _set__source_Tensor: in-place
// ops that change which memory and geometry `self`'s handle views, the same
// on every device: only growing touches memory, through the device's
// allocator and copy (on CUDA, stream-ordered on the current stream, as ATen's
// resize_bytes_cuda).
//
// resize_ (as ATen): the same sizes and no memory_format leave self as it is;
// otherwise self becomes contiguous (or channels-last for memory_format 1/2
// on a 4-D/5-D size) at its storage offset, keeping its bytes. When the new
// geometry needs more bytes than the storage has, ATen grows the storage in
// place, so every view of it sees the new memory; a Kiln Storage cannot be
// reallocated, so Kiln moves self alone to a new, larger storage on the same
// device holding the old bytes (ATen keeps them too; the bytes past them are
// uninitialised) - which is the same only if no other tensor shares the storage.
// When one does, resize_ fails with an error saying so rather than let the
// views silently diverge.
//
// set_(source): self becomes a view of source's storage with source's sizes,
// strides and offset, keeping self's dtype (as ATen, the bytes are
// reinterpreted if the dtypes differ).
#include <algorithm>

#include "shims/common/memory_budget.h"
#include "shims/common/op_util.h"
#include "shims/common/views/view_shims.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

Result<std::vector<int64_t>> strides_for(std::span<const int64_t> sizes, const int32_t* memory_format) {
  const int32_t mf = memory_format ? *memory_format : 0;
  if (mf == 0) return contiguous_strides(sizes);
  if (mf == 1 || mf == 2) {
    const size_t rank = mf == 1 ? 4 : 5;
    if (sizes.size() != rank)
      return invalid(std::string("required rank ") + std::to_string(rank) + " tensor to use " +
                           (mf == 1 ? "channels_last" : "channels_last_3d") + " format, got sizes " +
                           shape_string(sizes));
    std::vector<int64_t> order =
        rank == 4 ? std::vector<int64_t>{1, 3, 2, 0} : std::vector<int64_t>{1, 4, 3, 2, 0};
    std::vector<int64_t> strides(rank);
    int64_t s = 1;
    for (int64_t d : order) {
      strides[static_cast<size_t>(d)] = s;
      s *= std::max<int64_t>(sizes[static_cast<size_t>(d)], 1);
    }
    return strides;
  }
  return invalid("argument 'memory_format' is " + std::to_string(mf) +
                       ", expected contiguous (0), channels_last (1) or channels_last_3d (2)");
}

Error resize_to(Tensor& self, std::span<const int64_t> sizes, const int32_t* memory_format) {
  int64_t numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      return invalid("argument 'size' has negative dimension " + std::to_string(sizes[i]) +
                           " at index " + std::to_string(i));
    if (__builtin_mul_overflow(numel, sizes[i], &numel))
      return invalid("argument 'size' " + shape_string(sizes) + " has too many elements");
  }
  if (memory_format == nullptr && std::vector<int64_t>(sizes.begin(), sizes.end()) == self.sizes())
    return Error::Ok;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, strides_for(sizes, memory_format));
  const auto elem = static_cast<int64_t>(element_size(self.dtype()));
  int64_t needed = 0;
  if (numel > 0 && (__builtin_add_overflow(self.storage_offset(), numel, &needed) ||
                    __builtin_mul_overflow(needed, elem, &needed)))
    return invalid("argument 'size' " + shape_string(sizes) +
                         " needs more bytes than fit in int64");
  const StoragePtr& storage = self.storage();
  if (needed <= static_cast<int64_t>(storage->nbytes())) {
    self = Tensor(storage, self.dtype(), std::vector<int64_t>(sizes.begin(), sizes.end()), strides,
                  self.storage_offset());
    return Error::Ok;
  }
  if (storage->use_count() > 1)
    return invalid("resize_ to " + shape_string(sizes) + " needs " + std::to_string(needed) +
                         " bytes but the storage has " + std::to_string(storage->nbytes()) +
                         " and is shared with other tensors; Kiln cannot grow a shared storage in place");
  const std::vector<int64_t> flat{needed}, unit{1};
  KILN_ASSIGN_OR_RETURN(Tensor grown, empty_strided_in_budget(flat, unit, DType::UInt8, storage->device()));
  if (storage->nbytes() > 0 && storage->data() != nullptr) {
    // The old bytes, as bytes: copy_tensor copies on the storage's device
    // (on CUDA ordered on the current stream, before the old storage's free).
    const std::vector<int64_t> old_size{static_cast<int64_t>(storage->nbytes())};
    const Tensor from(storage, DType::UInt8, old_size, unit, 0);
    const Tensor to(grown.storage(), DType::UInt8, old_size, unit, 0);
    KILN_RETURN_IF_ERROR(copy_tensor(to, from));
  }
  self = Tensor(grown.storage(), self.dtype(), std::vector<int64_t>(sizes.begin(), sizes.end()), strides,
                self.storage_offset());
  return Error::Ok;
}

// ATen's suggest_memory_format for resize_as_'s preserve format: channels-last
// when the template's strides look like it.
int32_t suggested_format(const Tensor& t) {
  std::vector<int64_t> order;
  if (t.dim() == 4)
    order = {1, 3, 2, 0};
  else if (t.dim() == 5)
    order = {1, 4, 3, 2, 0};
  else
    return 0;
  if (t.stride(1) == 0) return 0;
  int64_t min = 0;
  for (int64_t d : order) {
    if (t.size(d) == 0 || t.stride(d) < min) return 0;
    if (d == 0 && min == t.stride(1)) return 0;
    min = t.stride(d);
    if (t.size(d) > 1) min *= t.size(d);
  }
  return t.dim() == 4 ? 1 : 2;
}

template <DeviceType kDevice>
AOTITorchError resize_on(const char* fn, AtenTensorHandle self, const int64_t* size, int64_t size_len_,
                         int32_t* memory_format) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> sizes, int_array_arg(size, size_len_, "size"));
    if (memory_format != nullptr && *memory_format == 3)
      return invalid("argument 'memory_format' is preserve_format, which resize_ does not support");
    return resize_to(*t, sizes, memory_format);
  });
}

template <DeviceType kDevice>
AOTITorchError resize_as_on(const char* fn, AtenTensorHandle self, AtenTensorHandle the_template,
                            int32_t* memory_format) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    KILN_ASSIGN_OR_RETURN(Tensor * tmpl, device_tensor_arg(the_template, "the_template", kDevice));
    const std::vector<int64_t> sizes = tmpl->sizes();
    KILN_RETURN_IF_ERROR(resize_to(*t, sizes, nullptr));
    if (memory_format == nullptr) return Error::Ok;
    const int32_t mf = *memory_format == 3 ? suggested_format(*tmpl) : *memory_format;
    return resize_to(*t, sizes, &mf);
  });
}

template <DeviceType kDevice>
AOTITorchError set_source_on(const char* fn, AtenTensorHandle self, AtenTensorHandle source) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    KILN_ASSIGN_OR_RETURN(Tensor * src, device_tensor_arg(source, "source", kDevice));
    if (src->device() != t->device())
      return invalid("argument 'source' is on " + device_string(src->device()) + " but self on " +
                     device_string(t->device()));
    KILN_ASSIGN_OR_RETURN(
        Tensor v, retyped_view(*src, t->dtype(), src->sizes(), src->strides(), src->storage_offset()));
    *t = std::move(v);
    return Error::Ok;
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_resize_(AtenTensorHandle self, const int64_t* size,
                                                       int64_t size_len_, int32_t* memory_format) {
  return resize_on<DeviceType::CPU>("aoti_torch_cpu_resize_", self, size, size_len_, memory_format);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_resize_(AtenTensorHandle self, const int64_t* size,
                                                        int64_t size_len_, int32_t* memory_format) {
  return resize_on<DeviceType::CUDA>("aoti_torch_cuda_resize_", self, size, size_len_, memory_format);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_resize_as_(AtenTensorHandle self, AtenTensorHandle the_template,
                                                          int32_t* memory_format) {
  return resize_as_on<DeviceType::CPU>("aoti_torch_cpu_resize_as_", self, the_template, memory_format);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_resize_as_(AtenTensorHandle self, AtenTensorHandle the_template,
                                                           int32_t* memory_format) {
  return resize_as_on<DeviceType::CUDA>("aoti_torch_cuda_resize_as_", self, the_template, memory_format);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_set__source_Tensor(AtenTensorHandle self, AtenTensorHandle source) {
  return set_source_on<DeviceType::CPU>("aoti_torch_cpu_set__source_Tensor", self, source);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_set__source_Tensor(AtenTensorHandle self, AtenTensorHandle source) {
  return set_source_on<DeviceType::CUDA>("aoti_torch_cuda_set__source_Tensor", self, source);
}

}  // extern "C"
