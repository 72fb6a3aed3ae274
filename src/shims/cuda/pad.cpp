// aoti_torch_cuda_pad: pads (or, with negative amounts, crops) the last
// pad.size()/2 dimensions with the CPU op's semantics and messages
// (src/shims/cpu/pad.cpp): constant, reflect, replicate, circular, any dtype,
// one gather kernel (kernels/pad_kernel.cu).
//
// The result is laid out as torch 2.11's CUDA kernels lay it out, which is not
// always as its CPU kernels do (the model library indexes it with those
// strides):
//   constant   - ATen's constant_pad_nd (the same code on every device): a
//                pure crop is a clone of the cropped view (empty_like's
//                strides); otherwise the input's suggested memory format
//                (channels-last kept for 4-d/5-d).
//   reflect,   - contiguous: the CUDA kernels allocate their results without
//   replicate    a memory format (checked against ATen CUDA for 1-d, 2-d and
//                3-d channels-last inputs), where the CPU kernels keep the
//                input's suggested format.
//   circular   - _pad_circular's new_empty: contiguous.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "devices/cuda/kernels/pad_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Result<PadMode> mode_arg(const char* mode) {
  if (mode == nullptr) return aoti::invalid("argument 'mode' is null");
  const std::string_view m(mode);
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "replicate") return PadMode::Replicate;
  if (m == "circular") return PadMode::Circular;
  return aoti::invalid("Unrecognised padding mode " + std::string(m));
}

// The strides of the result (see the file comment); `crop_only` is true when
// no amount is positive.
std::vector<int64_t> result_strides(PadMode mode, const TensorRef& self, const std::vector<int64_t>& out_sizes,
                                    bool crop_only) {
  const bool suggests_channels_last = aoti::strides_like_channels_last(self.sizes, self.strides);
  bool keep_format = false;
  switch (mode) {
    case PadMode::Constant:
      // The cropped view has the result's sizes and the input's strides.
      if (crop_only) return aoti::strides_like(out_sizes, self.strides);
      keep_format = true;
      break;
    case PadMode::Reflect:
    case PadMode::Replicate:
    case PadMode::Circular:
      break;
  }
  if (keep_format && suggests_channels_last) return aoti::channels_last_strides(out_sizes);
  return contiguous_strides(out_sizes);
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pad(AtenTensorHandle self_h, const int64_t* pad, int64_t pad_len_,
                                                    const char* mode, double* value, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_pad", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> amounts, aoti::int_array_arg(pad, pad_len_, "pad"));
    KILN_ASSIGN_OR_RETURN(PadMode md, mode_arg(mode));
    const std::string m(mode);
    const int64_t nd = self.dim();
    const int64_t np = static_cast<int64_t>(amounts.size());
    if (np % 2 != 0) return aoti::invalid("Padding length must be divisible by 2");
    if (np > 2 * nd)
      return aoti::invalid(
          "Padding length should be less than or equal to two times the input dimension but got padding length " +
          std::to_string(np) + " and input of dimension " + std::to_string(nd));
    if (md != PadMode::Constant) {
      if (value != nullptr && *value != 0.0)
        return aoti::invalid("Padding mode \"" + m + "\" doesn't take in value argument");
      if (np == 0 || np > 6 || (nd != np / 2 + 1 && nd != np / 2 + 2))
        return aoti::invalid("Padding size " + std::to_string(np) + " is not supported for " + std::to_string(nd) +
                             "D input tensor.");
    }
    if (md == PadMode::Reflect || md == PadMode::Replicate) {
      // The batch dimension (when present) may be 0; the others may not.
      for (int64_t d = nd == np / 2 + 2 ? 1 : 0; d < nd; ++d)
        if (self.sizes[static_cast<size_t>(d)] == 0)
          return aoti::invalid(
              "Expected a tensor with possibly 0 batch size and other non-zero dimensions for input, but got: " +
              aoti::shape_string(self.sizes));
    }
    if (nd > StridedIndexer::kMaxDims)
      return aoti::invalid("pad supports tensors of at most " + std::to_string(StridedIndexer::kMaxDims) +
                           " dimensions on CUDA, got " + std::to_string(nd));
    PadGeometry g;
    g.ndim = static_cast<int>(nd);
    g.mode = md;
    std::vector<int64_t> out_sizes = self.sizes;
    for (int64_t d = 0; d < nd; ++d) {
      const int64_t n = self.sizes[static_cast<size_t>(d)];
      g.dims[d] = PadDim{n, 0, 0, n};
      g.in_strides[d] = self.strides[static_cast<size_t>(d)];
    }
    bool crop_only = true;
    bool all_outputs_empty = true;
    for (int64_t k = 0; k < np / 2; ++k) {
      const int64_t d = nd - 1 - k;
      const int64_t n = self.sizes[static_cast<size_t>(d)];
      const int64_t before = amounts[static_cast<size_t>(2 * k)], after = amounts[static_cast<size_t>(2 * k + 1)];
      crop_only = crop_only && before <= 0 && after <= 0;
      int64_t out = 0;
      if (__builtin_add_overflow(n, before, &out) || __builtin_add_overflow(out, after, &out))
        return aoti::invalid("padding (" + std::to_string(before) + ", " + std::to_string(after) +
                             ") overflows the size of dimension " + std::to_string(d));
      const std::string where = " at dimension " + std::to_string(d) + " of input " + aoti::shape_string(self.sizes);
      if (md == PadMode::Reflect && (before >= n || after >= n))
        return aoti::invalid(
            "Padding size should be less than the corresponding input dimension, but got: padding (" +
            std::to_string(before) + ", " + std::to_string(after) + ")" + where);
      // What is left of the dimension after negative amounts crop it.
      const int64_t kept = n + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0);
      if (md == PadMode::Constant && (n + std::min<int64_t>(before, 0) < 0 || kept < 0))
        return aoti::invalid("padding (" + std::to_string(before) + ", " + std::to_string(after) +
                             ") crops more than the size" + where);
      if (md == PadMode::Circular && (before > n || after > n || (out > 0 && (before > kept || after > kept))))
        return aoti::invalid("Padding value causes wrapping around more than once" + where);
      if (out < 0)
        return aoti::invalid("padding (" + std::to_string(before) + ", " + std::to_string(after) +
                             ") gives a negative size" + where);
      all_outputs_empty = all_outputs_empty && out < 1;
      out_sizes[static_cast<size_t>(d)] = out;
      g.dims[d] = PadDim{n, before, std::max<int64_t>(-before, 0), kept};
    }
    // As ATen's reflection/replication kernels: an empty padded dimension is
    // accepted as long as one of them is not.
    if ((md == PadMode::Reflect || md == PadMode::Replicate) && all_outputs_empty)
      return aoti::invalid("input " + aoti::shape_string(self.sizes) +
                           " is too small: every padded dimension of the output would be empty");
    const bool convertible = self.dtype == DType::Complex64 || self.dtype == DType::Complex128 ||
                             is_floating_dtype(self.dtype) || is_integral_dtype(self.dtype);
    const double fill = md == PadMode::Constant && value != nullptr ? *value : 0.0;
    if (fill != 0.0 && !convertible)
      return aoti::invalid(std::string("a non-zero pad value cannot be written to dtype ") + dtype_name(self.dtype));
    const std::vector<int64_t> strides = result_strides(md, self, out_sizes, crop_only);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out,
                          new_tensor(out_sizes, strides, self.dtype, static_cast<int32_t>(DeviceType::CUDA),
                                     self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(g.out, indexer(o));
    KILN_RETURN_IF_ERROR(launch_pad(self.data, o.data, self.dtype, g, fill, current_stream(self.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
