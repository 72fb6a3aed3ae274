// Argument handling shared by the CUDA fallback ops (the counterpart of
// src/shims/cpu/op_args.h): dims, dtypes, the device a factory op creates on,
// strided indexers for kernels, and handing results to the caller.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/kernels/element_access.cuh"
#include "shims/common/layout_util.h"
#include "shims/common/op_util.h"
#include "shims/common/shim_util.h"
#include "shims/cuda/tensor_ref.h"

namespace kiln::cudadev {

using aoti::optional_dtype_arg;
using aoti::wrap_dim;



/// A kernel's view of `sizes`/`strides`, or an error past StridedIndexer::kMaxDims.
inline Result<StridedIndexer> indexer(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  if (sizes.size() > static_cast<size_t>(StridedIndexer::kMaxDims))
    return set_error(Error::NotSupported, "tensors of more than " + std::to_string(StridedIndexer::kMaxDims) +
                                              " dimensions are not supported by this CUDA op");
  StridedIndexer ix;
  ix.ndim = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    ix.sizes[d] = sizes[d];
    ix.strides[d] = strides[d];
  }
  return ix;
}
inline Result<StridedIndexer> indexer(const TensorRef& t) { return indexer(t.sizes, t.strides); }

/// `t` seen as lines along dimension `dim` (already wrapped).
inline LineShape line_shape(const TensorRef& t, int64_t dim) { return LineShape::along(t.sizes.data(), t.dim(), dim); }

/// InvalidArgument unless `t` (argument `name`) has the dtype and device of
/// `ref` (argument `ref_name`).
inline Error same_dtype_and_device(const TensorRef& t, const TensorRef& ref, const char* name, const char* ref_name) {
  if (t.dtype != ref.dtype)
    return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype) + " but " +
                         ref_name + " has " + dtype_name(ref.dtype));
  if (t.device_index != ref.device_index)
    return aoti::invalid(std::string("argument '") + name + "' is on CUDA device " +
                         std::to_string(t.device_index) + " but " + ref_name + " on " +
                         std::to_string(ref.device_index));
  return Error::Ok;
}

/// Element strides that read `t` broadcast to `sizes` (dimensions aligned
/// from the right; a missing or size-1 dimension gets stride 0), or
/// InvalidArgument naming argument `name` when it does not broadcast.
inline Result<std::vector<int64_t>> broadcast_strides(const TensorRef& t, std::span<const int64_t> sizes,
                                                      const char* name) {
  const auto fail = [&]() -> Error {
    return aoti::invalid(std::string("argument '") + name + "' " + t.describe() + " does not broadcast to " +
                         aoti::shape_string(sizes));
  };
  if (t.sizes.size() > sizes.size()) return fail();
  std::vector<int64_t> strides(sizes.size(), 0);
  const size_t lead = sizes.size() - t.sizes.size();
  for (size_t i = 0; i < t.sizes.size(); ++i) {
    if (t.sizes[i] == sizes[lead + i]) strides[lead + i] = t.strides[i];
    else if (t.sizes[i] != 1) return fail();
  }
  return strides;
}

/// The CUDA device index a factory op's (device, device_index) arguments name:
/// null device means the current one; a non-CUDA device is an error.
inline Result<int> factory_device(const int32_t* device, int32_t device_index) {
  if (device != nullptr && *device != static_cast<int32_t>(DeviceType::CUDA))
    return set_error(Error::InvalidArgument, "argument 'device' is not a CUDA device (code " +
                                                 std::to_string(*device) + ")");
  return resolve_device(device == nullptr ? -1 : device_index);
}

/// A factory op's layout and pin_memory arguments (either may be null): a
/// CUDA result is strided and never pinned, as ATen's empty_cuda requires.
inline Error strided_unpinned(const int32_t* layout, const int32_t* pin_memory) {
  if (layout != nullptr && *layout != 0)
    return aoti::invalid("argument 'layout' is " + std::to_string(*layout) + ", only strided (0) is supported");
  if (pin_memory != nullptr && *pin_memory != 0)
    return aoti::invalid("argument 'pin_memory' is true: only dense CPU tensors can be pinned");
  return Error::Ok;
}

/// A new CUDA tensor with ATen's empty_like strides for `like`.
inline Result<OwnedHandle> new_tensor_like(const TensorRef& like, DType dtype) {
  const std::vector<int64_t> strides = aoti::strides_like(like.sizes, like.strides);
  return new_tensor(like.sizes, strides, dtype, static_cast<int32_t>(DeviceType::CUDA), like.device_index);
}

/// A new contiguous CUDA tensor on `device`.
inline Result<OwnedHandle> new_contiguous(std::span<const int64_t> sizes, DType dtype, int device) {
  const std::vector<int64_t> strides = contiguous_strides(sizes);
  return new_tensor(sizes, strides, dtype, static_cast<int32_t>(DeviceType::CUDA), device);
}

/// Hands `h` to the caller through `ret` (a new reference).
inline Error return_handle(OwnedHandle& h, AtenTensorHandle* ret, const char* name) {
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret, name));
  *ret = h.release();
  return Error::Ok;
}

}  // namespace kiln::cudadev
