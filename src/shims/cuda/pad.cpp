// aoti_torch_cuda_pad: pads (or, with negative amounts, crops) the last
// pad.size()/2 dimensions with the CPU op's semantics and messages
// (arguments checked by shims/common/pad_args): constant, reflect, replicate, circular, any dtype,
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
#include <vector>

#include "devices/cuda/kernels/pad_kernel.h"
#include "shims/common/pad_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

PadMode kernel_mode(aoti::PadMode mode) {
  switch (mode) {
    case aoti::PadMode::Constant: return PadMode::Constant;
    case aoti::PadMode::Reflect: return PadMode::Reflect;
    case aoti::PadMode::Replicate: return PadMode::Replicate;
    case aoti::PadMode::Circular: return PadMode::Circular;
  }
  return PadMode::Constant;
}

// The strides of the result (see the file comment); `crop_only` is true when
// no amount is positive.
std::vector<int64_t> result_strides(aoti::PadMode mode, const TensorRef& self, const std::vector<int64_t>& out_sizes,
                                    bool crop_only) {
  const bool suggests_channels_last = aoti::strides_like_channels_last(self.sizes, self.strides);
  bool keep_format = false;
  switch (mode) {
    case aoti::PadMode::Constant:
      // The cropped view has the result's sizes and the input's strides.
      if (crop_only) return aoti::strides_like(out_sizes, self.strides);
      keep_format = true;
      break;
    case aoti::PadMode::Reflect:
    case aoti::PadMode::Replicate:
    case aoti::PadMode::Circular:
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
    KILN_ASSIGN_OR_RETURN(aoti::PadArgs args, aoti::pad_args(self.sizes, amounts, mode, value));
    const aoti::PadMode md = args.mode;
    const int64_t nd = self.dim();
    if (nd > StridedIndexer::kMaxDims)
      return aoti::invalid("pad supports tensors of at most " + std::to_string(StridedIndexer::kMaxDims) +
                           " dimensions on CUDA, got " + std::to_string(nd));
    PadGeometry g;
    g.ndim = static_cast<int>(nd);
    g.mode = kernel_mode(md);
    for (int64_t d = 0; d < nd; ++d) {
      const aoti::PadDimension& pd = args.dims[static_cast<size_t>(d)];
      g.dims[d] = PadDim{pd.size, pd.before, pd.crop_lo, pd.kept};
      g.in_strides[d] = self.strides[static_cast<size_t>(d)];
    }
    const bool convertible = self.dtype == DType::Complex64 || self.dtype == DType::Complex128 ||
                             is_floating_dtype(self.dtype) || is_integral_dtype(self.dtype);
    const double fill = md == aoti::PadMode::Constant && value != nullptr ? *value : 0.0;
    if (fill != 0.0 && !convertible)
      return aoti::invalid(std::string("a non-zero pad value cannot be written to dtype ") + dtype_name(self.dtype));
    const std::vector<int64_t> strides = result_strides(md, self, args.out_sizes, args.crop_only);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out,
                          new_tensor(args.out_sizes, strides, self.dtype, static_cast<int32_t>(DeviceType::CUDA),
                                     self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(g.out, indexer(o));
    KILN_RETURN_IF_ERROR(launch_pad(self.data, o.data, self.dtype, g, fill, current_stream(self.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
