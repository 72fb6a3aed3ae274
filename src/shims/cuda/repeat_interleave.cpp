// aoti_torch_cuda_repeat_interleave_Tensor: [0]*r0 ++ [1]*r1 ++ ... for a 1-d
// int32/int64 `repeats` on the device (the gather index behind
// tensor.repeat_interleave), in repeats' dtype, contiguous, a new tensor the
// caller owns. An inclusive prefix sum of the counts gives each index its
// range and every output element finds its index by binary search
// (kernels/mask_kernel.cu). Outside CUDA graph capture the host reads the
// total and the first negative count back (one stream synchronisation) to
// size the result, or, with output_size given, to check it as the CPU op
// does. Under capture nothing may synchronise: output_size is then required
// and trusted, and a negative count counts as 0.
#include <limits>
#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/mask_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

/// Reads repeats[position] back for the error message.
Result<int64_t> read_repeat(const TensorRef& repeats, unsigned long long position, cudaStream_t stream) {
  int64_t v64 = 0;
  int32_t v32 = 0;
  const int64_t bytes = static_cast<int64_t>(repeats.element_bytes());
  const bool narrow = repeats.dtype == DType::Int32;
  void* dst = narrow ? static_cast<void*>(&v32) : static_cast<void*>(&v64);
  const char* src = static_cast<const char*>(repeats.data) +
                    static_cast<int64_t>(position) * repeats.strides[0] * bytes;
  KILN_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return narrow ? static_cast<int64_t>(v32) : v64;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_repeat_interleave_Tensor(AtenTensorHandle repeats_h,
                                                                         int64_t* output_size,
                                                                         AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_repeat_interleave_Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef repeats, read_tensor(repeats_h, "repeats"));
    if (repeats.dim() != 1)
      return aoti::invalid("argument 'repeats' has " + std::to_string(repeats.dim()) + " dimensions, expected 1");
    if (repeats.dtype != DType::Int64 && repeats.dtype != DType::Int32)
      return aoti::invalid(std::string("argument 'repeats' has dtype ") + dtype_name(repeats.dtype) +
                           ", expected int64 or int32");
    if (output_size != nullptr && *output_size < 0)
      return aoti::invalid("argument 'output_size' is " + std::to_string(*output_size) + ", expected >= 0");
    const int64_t n = repeats.sizes[0];
    const cudaStream_t stream = current_stream(repeats.device_index);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    const bool capturing = capture != cudaStreamCaptureStatusNone;
    if (capturing && output_size == nullptr)
      return set_error(Error::NotSupported,
                       "repeat_interleave without output_size has a result size that depends on the data, so it "
                       "cannot be recorded in a CUDA graph (pass output_size)");

    // ends[0..n), then the first negative position (8 bytes).
    KILN_ASSIGN_OR_RETURN(DeviceBuffer ends_buffer, DeviceBuffer::allocate(static_cast<size_t>(n + 1) * 8,
                                                                           repeats.device_index, stream));
    auto* ends = static_cast<int64_t*>(ends_buffer.get());
    auto* first_negative = reinterpret_cast<unsigned long long*>(ends + n);
    KILN_ASSIGN_OR_RETURN(size_t bytes, repeat_ends_workspace(n));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(bytes, repeats.device_index, stream));
    if (!capturing)
      KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_negative, 0xFF, sizeof(unsigned long long), stream));
    KILN_RETURN_IF_ERROR(launch_repeat_ends(repeats.data, repeats.dtype, repeats.strides[0], n, ends,
                                            capturing ? nullptr : first_negative, workspace.get(), bytes, stream));

    int64_t total = output_size != nullptr ? *output_size : 0;
    if (!capturing && n > 0) {
      int64_t sum = 0;
      unsigned long long bad = 0;
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&sum, ends + n - 1, sizeof sum, cudaMemcpyDeviceToHost, stream));
      KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&bad, first_negative, sizeof bad, cudaMemcpyDeviceToHost, stream));
      KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      if (bad != std::numeric_limits<unsigned long long>::max()) {
        KILN_ASSIGN_OR_RETURN(int64_t v, read_repeat(repeats, bad, stream));
        return aoti::invalid("argument 'repeats' has a negative value " + std::to_string(v) + " at position " +
                             std::to_string(bad));
      }
      if (output_size != nullptr && *output_size != sum)
        return aoti::invalid("argument 'output_size' is " + std::to_string(*output_size) +
                             ", but repeats sum to " + std::to_string(sum));
      total = sum;
    } else if (!capturing && output_size != nullptr && *output_size != 0) {
      return aoti::invalid("argument 'output_size' is " + std::to_string(*output_size) + ", but repeats sum to 0");
    }

    const int64_t sizes[1] = {total};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, repeats.dtype, repeats.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(launch_repeat_expand(ends, n, o.data, repeats.dtype, total, stream));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
