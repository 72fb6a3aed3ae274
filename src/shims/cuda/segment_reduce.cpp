// aoti_torch_cuda_segment_reduce: reduces consecutive segments of `data`
// along `axis` (sum, mean, max, min or prod), the segments given by
// `offsets` or else `lengths`, with the CPU op's checks and messages
// (shims/common/segment_reduce_args.h). Two kernels on the current stream
// (kernels/segment_reduce_kernel.cu): the segment bounds (checked, and
// clamped so no read leaves data), then one thread (or, for long innermost
// segments, one warp) per result element. As
// ATen's CUDA kernel: float32/float64/float16/bfloat16 data of any strides,
// each step of a reduction rounded to data's dtype, `initial` converted to
// it (an error if it overflows), an empty segment giving `initial` or the
// reduction's identity (NaN for mean); the result is a new contiguous tensor
// the caller owns. Lengths or offsets that break the rules: outside a CUDA
// graph capture an error naming the value (one synchronisation reads the
// check's flag; ATen synchronises for its lengths check too); under capture
// nothing is read back and the clamped bounds are used.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/segment_reduce_kernel.h"
#include "shims/common/segment_reduce_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;
namespace seg = kiln::aoti::segment;

namespace {

Result<std::optional<TensorRef>> optional_tensor(AtenTensorHandle* h, const char* name) {
  if (h == nullptr || *h == nullptr) return std::optional<TensorRef>{};
  KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(*h, name));
  return std::optional<TensorRef>{std::move(t)};
}

seg::TensorShape shape_of(const std::optional<TensorRef>& t) {
  return t ? seg::TensorShape{true, t->dtype, t->sizes} : seg::TensorShape{};
}

// The message for segment values the bounds kernel flagged: the values read
// back and checked on the host as the CPU op checks them.
Error describe_bad_segments(const TensorRef& s, const seg::Plan& plan, bool unsafe, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(s.numel());
  std::vector<int64_t> values(n);
  if (n > 0) {
    const std::vector<int64_t> dense = contiguous_strides(s.sizes);
    KILN_ASSIGN_OR_RETURN(DeviceBuffer copy, copy_to_layout(s, dense, stream));
    std::vector<int32_t> v32(s.dtype == DType::Int32 ? n : 0);
    void* host = s.dtype == DType::Int32 ? static_cast<void*>(v32.data()) : static_cast<void*>(values.data());
    KILN_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host, copy.get(), n * s.element_bytes(), cudaMemcpyDeviceToHost, stream));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < v32.size(); ++i) values[i] = v32[i];
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, seg::segment_starts(plan, values, unsafe));
  (void)starts;
  return set_error(Error::BackendFailed, std::string("the '") + plan.seg_name +
                                             "' check on the device failed for values the host accepts");
}

SegmentReduce kernel_op(seg::Reduce r) {
  switch (r) {
    case seg::Reduce::Sum: return SegmentReduce::Sum;
    case seg::Reduce::Mean: return SegmentReduce::Mean;
    case seg::Reduce::Max: return SegmentReduce::Max;
    case seg::Reduce::Min: return SegmentReduce::Min;
    case seg::Reduce::Prod: return SegmentReduce::Prod;
  }
  return SegmentReduce::Sum;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_segment_reduce(AtenTensorHandle data_h, const char* reduce,
                                                               AtenTensorHandle* lengths_h,
                                                               AtenTensorHandle* indices_h,
                                                               AtenTensorHandle* offsets_h, int64_t axis,
                                                               int32_t unsafe, double* initial,
                                                               AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_segment_reduce", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef data, read_tensor(data_h, "data"));
    KILN_ASSIGN_OR_RETURN(std::optional<TensorRef> lengths, optional_tensor(lengths_h, "lengths"));
    KILN_ASSIGN_OR_RETURN(std::optional<TensorRef> indices, optional_tensor(indices_h, "indices"));
    KILN_ASSIGN_OR_RETURN(std::optional<TensorRef> offsets, optional_tensor(offsets_h, "offsets"));
    KILN_ASSIGN_OR_RETURN(seg::Plan plan, seg::plan(data.dtype, data.sizes, reduce, shape_of(lengths),
                                                    indices.has_value(), shape_of(offsets), axis));
    const TensorRef& s = plan.by_lengths ? *lengths : *offsets;
    if (s.device_index != data.device_index)
      return aoti::invalid(std::string("argument '") + plan.seg_name + "' is on CUDA device " +
                           std::to_string(s.device_index) + " but data on " + std::to_string(data.device_index));
    KILN_RETURN_IF_ERROR(seg::initial_fits(initial, data.dtype));

    SegmentGeometry g;
    g.outer = plan.outer;
    g.width = plan.width;
    g.inner = plan.inner;
    g.segments = plan.segments;
    g.axis_stride = data.strides[static_cast<size_t>(plan.axis)];
    KILN_ASSIGN_OR_RETURN(g.data, indexer(data));
    KILN_ASSIGN_OR_RETURN(g.seg, indexer(s));
    g.seg_dtype = s.dtype;
    g.by_lengths = plan.by_lengths;

    const int device = data.device_index;
    const cudaStream_t stream = current_stream(device);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(plan.out_sizes, data.dtype, device));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    if (plan.outer == 0) return return_handle(out, ret0, "ret0");

    const size_t bound_bytes = static_cast<size_t>(plan.outer * (plan.segments + 1)) * sizeof(int64_t);
    KILN_ASSIGN_OR_RETURN(DeviceBuffer bounds, DeviceBuffer::allocate(bound_bytes, device, stream));
    auto* starts = static_cast<int64_t*>(bounds.get());
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      KILN_RETURN_IF_ERROR(launch_segment_starts(s.data, g, unsafe != 0, starts, nullptr, stream));
    } else {
      KILN_ASSIGN_OR_RETURN(DeviceBuffer flag, DeviceBuffer::allocate(sizeof(int), device, stream));
      auto* bad = static_cast<int*>(flag.get());
      KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bad, 0, sizeof(int), stream));
      KILN_RETURN_IF_ERROR(launch_segment_starts(s.data, g, unsafe != 0, starts, bad, stream));
      int host_bad = 0;
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&host_bad, bad, sizeof(int), cudaMemcpyDeviceToHost, stream));
      KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      if (host_bad != 0) return describe_bad_segments(s, plan, unsafe != 0, stream);
    }
    KILN_RETURN_IF_ERROR(launch_segment_reduce(data.data, data.dtype, g, starts,
                                               kernel_op(plan.reduce), initial != nullptr,
                                               initial != nullptr ? *initial : 0.0, o.data, stream));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
