// aoti_torch_cuda_nonzero, aoti_torch_cuda_nonzero_static: the coordinates
// of the non-zero elements (NaN counts, -0.0 does not), int64 [n, ndim] in
// row-major order of the elements, a new tensor the caller owns, laid out
// with strides (1, n) as ATen's CUDA kernels and meta functions give it.
// nonzero's n is data-dependent, so the call waits for the count (a stream
// synchronisation) and cannot be recorded in a CUDA graph. nonzero_static's
// n is `size`: the first `size` coordinates, the rows past the count filled
// with fill_value, placed on the device from a prefix count of the non-zero
// elements (kernels/mask_kernel.cu) without waiting, so it can be captured.
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/mask_kernel.h"
#include "devices/cuda/kernels/sort_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error supported_dtype(const TensorRef& self) {
  if (!is_integral_dtype(self.dtype) && !is_floating_dtype(self.dtype) && self.dtype != DType::Complex64 &&
      self.dtype != DType::Complex128)
    return aoti::invalid(std::string("nonzero of dtype ") + dtype_name(self.dtype) + " is not supported on CUDA");
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nonzero(AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_nonzero", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_RETURN_IF_ERROR(supported_dtype(self));
    cudaStream_t stream = current_stream(self.device_index);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
      return set_error(Error::NotSupported,
                       "nonzero's result size depends on the data, so it cannot be recorded in a CUDA graph");
    const int64_t numel = self.numel();
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
    KILN_ASSIGN_OR_RETURN(size_t bytes, nonzero_workspace(numel));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer flat, DeviceBuffer::allocate(static_cast<size_t>(numel + 1) * 8,
                                                                   self.device_index, stream));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(bytes, self.device_index, stream));
    auto* flat_ptr = static_cast<int64_t*>(flat.get());
    int64_t* count_device = flat_ptr + numel;
    KILN_RETURN_IF_ERROR(launch_nonzero_flat(self.data, self.dtype, in_index, numel, flat_ptr, count_device,
                                             workspace.get(), bytes, stream));
    int64_t count = 0;
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&count, count_device, sizeof count, cudaMemcpyDeviceToHost, stream));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    const int64_t ndim = self.dim();
    const std::vector<int64_t> sizes{count, ndim};
    const std::vector<int64_t> strides{1, count > 0 ? count : 1};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(sizes, strides, DType::Int64,
                                                       static_cast<int32_t>(DeviceType::CUDA), self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(StridedIndexer shape, indexer(self.sizes, self.sizes));
    KILN_RETURN_IF_ERROR(launch_unravel(flat_ptr, count, shape, static_cast<int64_t*>(o.data), 1, strides[1], stream));
    return return_handle(out, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nonzero_static(AtenTensorHandle self_h, int64_t size,
                                                               int64_t fill_value, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_nonzero_static", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    if (size < 0) return aoti::invalid("argument 'size' is " + std::to_string(size) + ", expected >= 0");
    KILN_RETURN_IF_ERROR(supported_dtype(self));
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
    KILN_ASSIGN_OR_RETURN(StridedIndexer shape, indexer(self.sizes, self.sizes));
    const int64_t ndim = self.dim();
    const std::vector<int64_t> sizes{size, ndim};
    const std::vector<int64_t> strides{1, size};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(sizes, strides, DType::Int64,
                                                       static_cast<int32_t>(DeviceType::CUDA), self.device_index));
    if (size == 0 || ndim == 0) return return_handle(out, ret0, "ret0");
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    const cudaStream_t stream = current_stream(self.device_index);
    const int64_t numel = self.numel();
    KILN_ASSIGN_OR_RETURN(size_t bytes, mask_positions_workspace(numel));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer positions, DeviceBuffer::allocate(static_cast<size_t>(numel + 1) * 8,
                                                                         self.device_index, stream));
    KILN_ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(bytes, self.device_index, stream));
    auto* pos = static_cast<int64_t*>(positions.get());
    KILN_RETURN_IF_ERROR(launch_mask_positions(self.data, self.dtype, in_index, numel, pos, workspace.get(), bytes,
                                               stream));
    KILN_RETURN_IF_ERROR(launch_nonzero_static(pos, numel, shape, size, fill_value, static_cast<int64_t*>(o.data),
                                               stream));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
