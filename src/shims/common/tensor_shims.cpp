// Tensor creation, views, lifetime and copies: the device-neutral core of the
// shim. Memory comes from the device interfaces through kiln::Tensor; views
// share the Storage (refcounted), so a view outlives the handle it came from.
#include <cstring>
#include <string>
#include <vector>

#include "shims/common/memory_budget.h"
#include "shims/common/element_convert.h"
#include "shims/common/layout_util.h"
#include "shims/common/shim_util.h"
#include "core/device_interface.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

struct Geometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// Reads (ndim, sizes, strides); null strides mean contiguous.
Result<Geometry> geometry_arg(int64_t ndim, const int64_t* sizes, const int64_t* strides) {
  KILN_ASSIGN_OR_RETURN(auto s, int_array_arg(sizes, ndim, "sizes"));
  Geometry g{{s.begin(), s.end()}, {}};
  if (strides == nullptr) {
    g.strides = contiguous_strides(g.sizes);
  } else {
    g.strides.assign(strides, strides + ndim);
  }
  return g;
}

// Output handle from a tensor; the handle is the caller's.
Error emit(Tensor t, AtenTensorHandle* ret) {
  AtenTensorHandle h = new_handle(std::move(t));
  if (h == nullptr) return set_error(Error::OutOfMemory, "out of host memory for a tensor handle");
  *ret = h;
  return Error::Ok;
}

Error empty_strided_impl(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                         int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  KILN_RETURN_IF_ERROR(out_arg(ret, "ret_new_tensor"));
  KILN_ASSIGN_OR_RETURN(Geometry g, geometry_arg(ndim, sizes, strides));
  KILN_ASSIGN_OR_RETURN(DType dt, dtype_arg(dtype));
  KILN_ASSIGN_OR_RETURN(Device dev, device_arg(device_type, device_index));
  KILN_ASSIGN_OR_RETURN(Tensor t, empty_strided_in_budget(g.sizes, g.strides, dt, dev));
  return emit(std::move(t), ret);
}

Error from_blob_impl(void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides, int64_t storage_offset,
                     int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret) {
  KILN_RETURN_IF_ERROR(out_arg(ret, "ret"));
  if (data == nullptr)  // ATen's convention: a null blob (zero-size constants) gets fresh memory.
    return empty_strided_impl(ndim, sizes, strides, dtype, device_type, device_index, ret);
  KILN_ASSIGN_OR_RETURN(Geometry g, geometry_arg(ndim, sizes, strides));
  KILN_ASSIGN_OR_RETURN(DType dt, dtype_arg(dtype));
  KILN_ASSIGN_OR_RETURN(Device dev, device_arg(device_type, device_index));
  if (storage_offset < 0) return invalid("negative storage offset " + std::to_string(storage_offset));
  KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(g.sizes, g.strides, dt));
  // The borrowed storage starts at `data` and covers the offset plus the view.
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(storage_offset, static_cast<int64_t>(element_size(dt)), &nbytes) ||
      __builtin_add_overflow(nbytes, extent, &nbytes))
    return invalid("storage offset " + std::to_string(storage_offset) + " overflows");
  auto storage = Storage::create(data, static_cast<size_t>(nbytes), dev);  // no deleter: borrowed
  return emit(Tensor(std::move(storage), dt, std::move(g.sizes), std::move(g.strides), storage_offset), ret);
}

// A view of `base`'s storage with new geometry, dtype and absolute offset, bounds-checked.
Error view_impl(const Tensor& base, DType dtype, std::span<const int64_t> sizes, std::span<const int64_t> strides,
                int64_t storage_offset, AtenTensorHandle* ret) {
  if (dtype == base.dtype()) {
    KILN_ASSIGN_OR_RETURN(Tensor v, base.make_view(sizes, strides, storage_offset));
    return emit(std::move(v), ret);
  }
  // Different dtype (_alloc_from_pool): re-type the storage first, then check.
  Tensor retyped(base.storage(), dtype, {0}, {1}, 0);
  KILN_ASSIGN_OR_RETURN(Tensor v, retyped.make_view(sizes, strides, storage_offset));
  return emit(std::move(v), ret);
}

// Writes `src` into `dst` with broadcasting and dtype conversion, across devices.
Error copy_impl(const Tensor& dst, const Tensor& src) {
  // Broadcast src to dst's shape (right-aligned, size-1 dims get stride 0).
  if (src.dim() > dst.dim()) return invalid("cannot broadcast " + src.describe() + " to " + dst.describe());
  std::vector<int64_t> bstrides(dst.sizes().size(), 0);
  const size_t lead = dst.sizes().size() - src.sizes().size();
  for (size_t i = 0; i < src.sizes().size(); ++i) {
    const int64_t ss = src.sizes()[i], ds = dst.sizes()[lead + i];
    if (ss == ds) {
      bstrides[lead + i] = src.strides()[i];
    } else if (ss != 1) {
      return invalid("cannot broadcast " + src.describe() + " to " + dst.describe());
    }
  }
  const Tensor bsrc(src.storage(), src.dtype(), dst.sizes(), bstrides, src.storage_offset());
  const bool broadcast = src.sizes() != dst.sizes();
  if (dst.dtype() == src.dtype() && (!broadcast || (src.device().is_cpu() && dst.device().is_cpu())))
    return copy_tensor(dst, bsrc);
  // Conversion or a broadcast across devices: go through host tensors.
  Tensor host_src = bsrc;
  if (!src.device().is_cpu()) {
    KILN_ASSIGN_OR_RETURN(host_src, Tensor::empty(src.sizes(), src.dtype()));
    KILN_RETURN_IF_ERROR(copy_tensor(host_src, src));
    host_src = Tensor(host_src.storage(), src.dtype(), dst.sizes(), [&] {
      std::vector<int64_t> s(dst.sizes().size(), 0);
      auto cs = contiguous_strides(src.sizes());
      for (size_t i = 0; i < src.sizes().size(); ++i)
        if (src.sizes()[i] == dst.sizes()[lead + i]) s[lead + i] = cs[i];
      return s;
    }(), 0);
  }
  if (dst.device().is_cpu()) return convert_copy_host(dst, host_src);
  KILN_ASSIGN_OR_RETURN(Tensor host_dst, Tensor::empty(dst.sizes(), dst.dtype()));
  KILN_RETURN_IF_ERROR(convert_copy_host(host_dst, host_src));
  return copy_tensor(dst, host_dst);
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                                         const int64_t* strides_ptr, int32_t dtype,
                                                         int32_t device_type, int32_t device_index,
                                                         AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch_empty_strided", [&] {
    return empty_strided_impl(ndim, sizes_ptr, strides_ptr, dtype, device_type, device_index, ret_new_tensor);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr,
                                                                const int64_t* strides_ptr, int32_t dtype,
                                                                int32_t device_type, int32_t device_index,
                                                                AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch_empty_strided_pinned", [&] {
    if (device_type != static_cast<int32_t>(DeviceType::CPU))
      return invalid("only CPU tensors can be pinned (device type " + std::to_string(device_type) + ")");
    // Ordinary host memory: correct for every copy, just not page-locked.
    return empty_strided_impl(ndim, sizes_ptr, strides_ptr, dtype, device_type, device_index, ret_new_tensor);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                                   const int64_t* strides_ptr, int64_t storage_offset,
                                                                   int32_t dtype, int32_t device_type,
                                                                   int32_t device_index, AtenTensorHandle* ret) {
  return guarded("aoti_torch_create_tensor_from_blob", [&] {
    return from_blob_impl(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout,
    const uint8_t* opaque_metadata, int64_t opaque_metadata_size) {
  return guarded("aoti_torch_create_tensor_from_blob_v2", [&] {
    // Only strided tensors exist in Kiln; opaque metadata only describes mkldnn layouts.
    if (layout != 0) return invalid("layout " + std::to_string(layout) + " is not supported (only strided)");
    return from_blob_impl(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type, device_index, ret);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                               const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                                               int64_t offset_increment,
                                                               AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch__reinterpret_tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret_new_tensor, "ret_new_tensor"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(auto sizes, int_array_arg(sizes_ptr, ndim, "sizes"));
    KILN_ASSIGN_OR_RETURN(auto strides, int_array_arg(strides_ptr, ndim, "strides"));
    // The offset is relative to self's (ATen's _reinterpret_tensor increments it).
    return view_impl(*t, t->dtype(), sizes, strides, t->storage_offset() + offset_increment, ret_new_tensor);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes_ptr,
                                                      const int64_t* strides_ptr, AtenTensorHandle* ret) {
  return guarded("aoti_torch_as_strided", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret, "ret"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(self, "self"));
    // The ABI passes no rank: the view has self's rank.
    KILN_ASSIGN_OR_RETURN(auto sizes, int_array_arg(sizes_ptr, t->dim(), "sizes"));
    KILN_ASSIGN_OR_RETURN(auto strides, int_array_arg(strides_ptr, t->dim(), "strides"));
    return view_impl(*t, t->dtype(), sizes, strides, t->storage_offset(), ret);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes, int32_t dtype,
                                                            int64_t ndim, const int64_t* sizes_ptr,
                                                            const int64_t* strides_ptr,
                                                            AtenTensorHandle* ret_new_tensor) {
  return guarded("aoti_torch__alloc_from_pool", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret_new_tensor, "ret_new_tensor"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(DType dt, dtype_arg(dtype));
    if (t->storage_offset() != 0) return invalid("pool tensor has a nonzero storage offset");
    const auto elem = static_cast<int64_t>(element_size(dt));
    if (offset_bytes < 0 || offset_bytes % elem != 0)
      return invalid("offset_bytes " + std::to_string(offset_bytes) + " is not a non-negative multiple of " +
                     std::to_string(elem));
    KILN_ASSIGN_OR_RETURN(auto sizes, int_array_arg(sizes_ptr, ndim, "sizes"));
    KILN_ASSIGN_OR_RETURN(auto strides, int_array_arg(strides_ptr, ndim, "strides"));
    return view_impl(*t, dt, sizes, strides, offset_bytes / elem, ret_new_tensor);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                             AtenTensorHandle* new_handle_out) {
  return guarded("aoti_torch_new_tensor_handle", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(new_handle_out, "new_handle"));
    Tensor* t = from_handle(orig_handle);
    if (t == nullptr) return invalid("argument 'orig_handle' is a null tensor handle");
    KILN_RETURN_IF_ERROR(emit(*t, new_handle_out));
    NewHandleCapture::note(*new_handle_out);
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret) {
  return guarded("aoti_torch_new_uninitialized_tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret, "ret"));
    return emit(Tensor(), ret);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  delete_handle(tensor);
  return KILN_AOTI_SUCCESS;
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guarded("aoti_torch_clone", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret, "ret"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(self, "self"));
    const auto strides = strides_like(t->sizes(), t->strides());
    KILN_ASSIGN_OR_RETURN(Tensor out, empty_strided_in_budget(t->sizes(), strides, t->dtype(), t->device()));
    KILN_RETURN_IF_ERROR(copy_tensor(out, *t));
    return emit(std::move(out), ret);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guarded("aoti_torch_clone_preserve_strides", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret, "ret"));
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor out, empty_strided_in_budget(t->sizes(), t->strides(), t->dtype(), t->device()));
    // Copy the whole byte range the view spans (gaps included), as ATen does,
    // so the clone is bitwise identical over its extent.
    KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(t->sizes(), t->strides(), t->dtype()));
    if (extent > 0) {
      const int64_t n = extent;
      Tensor src_bytes(t->storage(), DType::UInt8, {n}, {1},
                       t->storage_offset() * static_cast<int64_t>(element_size(t->dtype())));
      Tensor dst_bytes(out.storage(), DType::UInt8, {n}, {1}, 0);
      KILN_RETURN_IF_ERROR(copy_tensor(dst_bytes, src_bytes));
    }
    return emit(std::move(out), ret);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking) {
  return guarded("aoti_torch_copy_", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * d, tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * s, tensor_arg(src, "src"));
    // Copies are synchronous on Kiln's devices' default streams; non_blocking is a hint only.
    return copy_impl(*d, *s);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst) {
  return guarded("aoti_torch_tensor_copy_", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * d, tensor_arg(dst, "dst"));
    KILN_ASSIGN_OR_RETURN(Tensor * s, tensor_arg(src, "src"));
    return copy_impl(*d, *s);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst) {
  return guarded("aoti_torch_assign_tensors", [&]() -> Error {
    Tensor* s = from_handle(src);
    Tensor* d = from_handle(dst);
    if (s == nullptr || d == nullptr) return invalid("null tensor handle");
    *d = *s;
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst) {
  return guarded("aoti_torch_assign_tensors_out", [&]() -> Error {
    KILN_RETURN_IF_ERROR(out_arg(ret_dst, "ret_dst"));
    Tensor* s = from_handle(src);
    if (s == nullptr) return invalid("argument 'src' is a null tensor handle");
    return emit(*s, ret_dst);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self) {
  return guarded("aoti_torch_zero_", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, tensor_arg(self, "self"));
    if (t->numel() == 0) return Error::Ok;
    // All-zero bytes are zero for every Kiln dtype; fill a host buffer of the
    // same dtype and copy it in (handles any strides and devices).
    KILN_ASSIGN_OR_RETURN(Tensor zeros, Tensor::empty(t->sizes(), t->dtype()));
    std::memset(zeros.data_ptr(), 0, zeros.nbytes());
    return copy_tensor(*t, zeros);
  });
}

}  // extern "C"
