// aoti_torch_cpu_reshape: `self` with a new shape (one size may be -1, to be
// inferred). As ATen, the result is a view sharing self's storage whenever
// the new shape can be expressed with strides over the same memory (ATen's
// computeStride: each run of dimensions that is contiguous in memory can be
// split or merged), and a contiguous copy only otherwise.
#include <optional>

#include "shims/common/views/view_shims.h"
#include "shims/common/op_util.h"

using namespace kiln;
using namespace kiln::aoti;

namespace {

Result<std::vector<int64_t>> infer_shape(std::span<const int64_t> shape, int64_t numel) {
  std::vector<int64_t> out(shape.begin(), shape.end());
  std::optional<size_t> infer;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer) return invalid("only one dimension can be inferred");
      infer = i;
    } else if (out[i] < 0) {
      return invalid("invalid shape dimension " + std::to_string(out[i]) + " at index " +
                           std::to_string(i) + " of shape " + aoti::shape_string(shape));
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      return invalid("shape " + aoti::shape_string(shape) + " has too many elements");
    }
  }
  if (infer) {
    if (known == 0)
      return invalid("cannot reshape tensor of 0 elements into shape " + aoti::shape_string(shape) +
                           " because the unspecified dimension size -1 can be any value and is ambiguous");
    if (numel % known == 0) {
      out[*infer] = numel / known;
      return out;
    }
  } else if (known == numel) {
    return out;
  }
  return invalid("shape '" + aoti::shape_string(shape) + "' is invalid for input of size " +
                       std::to_string(numel));
}

// Strides that make `newshape` a view of a tensor with `oldshape` and
// `oldstride`, or nullopt when none exist.
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& oldshape,
                                                 const std::vector<int64_t>& oldstride,
                                                 const std::vector<int64_t>& newshape) {
  const int64_t nn = static_cast<int64_t>(newshape.size());
  std::vector<int64_t> newstride(newshape.size(), 1);
  if (oldshape.empty()) return newstride;
  int64_t numel = 1;
  for (int64_t s : oldshape) numel *= s;
  if (numel == 0) {
    if (oldshape == newshape) return oldstride;
    for (int64_t d = nn - 1; d >= 0; --d)
      newstride[static_cast<size_t>(d)] = d == nn - 1
                                              ? 1
                                              : std::max<int64_t>(newshape[static_cast<size_t>(d + 1)], 1) *
                                                    newstride[static_cast<size_t>(d + 1)];
    return newstride;
  }
  int64_t view_d = nn - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = static_cast<int64_t>(oldshape.size()) - 1; td >= 0; --td) {
    tensor_numel *= oldshape[static_cast<size_t>(td)];
    if (td == 0 || (oldshape[static_cast<size_t>(td - 1)] != 1 &&
                    oldstride[static_cast<size_t>(td - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[static_cast<size_t>(view_d)] == 1)) {
        newstride[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = oldstride[static_cast<size_t>(td - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

}  // namespace

namespace {

template <DeviceType kDevice>
AOTITorchError reshape_on(const char* fn, AtenTensorHandle self, const int64_t* shape,
                                                       int64_t shape_len_, AtenTensorHandle* ret0) {
  return guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, device_tensor_arg(self, "self", kDevice));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> raw, int_array_arg(shape, shape_len_, "shape"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, infer_shape(raw, t->numel()));
    if (std::optional<std::vector<int64_t>> strides = view_strides(t->sizes(), t->strides(), sizes)) {
      KILN_ASSIGN_OR_RETURN(Tensor v, t->make_view(sizes, *strides, t->storage_offset()));
      return return_tensor(std::move(v), ret0, "ret0");
    }
    // Not viewable: a contiguous copy on the tensor's device, through the
    // allocation and copy shims so a CUDA copy is ordered on the current stream.
    const std::vector<int64_t> dense = contiguous_strides(sizes);
    AtenTensorHandle out = nullptr;
    if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), dense.data(),
                                 static_cast<int32_t>(t->dtype()), static_cast<int32_t>(t->device().type),
                                 t->device().index, &out) != 0)
      return set_error(Error::OutOfMemory, "allocating the reshaped copy: " + last_error_message());
    Tensor* copy = from_handle(out);
    const Tensor source_order(copy->storage(), t->dtype(), t->sizes(), contiguous_strides(t->sizes()),
                              copy->storage_offset());
    AtenTensorHandle dst = new_handle(source_order);
    const bool copied = dst != nullptr && aoti_torch_copy_(dst, self, 0) == 0;
    delete_handle(dst);
    if (!copied) {
      delete_handle(out);
      return set_error(Error::BackendFailed, "copying for reshape: " + last_error_message());
    }
    *ret0 = out;
    return Error::Ok;
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_reshape(AtenTensorHandle self, const int64_t* shape,
                                                       int64_t shape_len_, AtenTensorHandle* ret0) {
  return reshape_on<DeviceType::CPU>("aoti_torch_cpu_reshape", self, shape, shape_len_, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_reshape(AtenTensorHandle self, const int64_t* shape,
                                                       int64_t shape_len_, AtenTensorHandle* ret0) {
  return reshape_on<DeviceType::CUDA>("aoti_torch_cuda_reshape", self, shape, shape_len_, ret0);
}

}  // extern "C"
