// aoti_torch_cuda_nonzero: the coordinates of the non-zero elements, int64
// [n, ndim] laid out with strides (1, n) as ATen's meta function gives it.
// n is data-dependent, so the call waits for the count (a stream
// synchronisation) and cannot be recorded in a CUDA graph.
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/sort_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nonzero(AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_nonzero", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    if (!is_integral_dtype(self.dtype) && !is_floating_dtype(self.dtype))
      return aoti::invalid(std::string("nonzero of dtype ") + dtype_name(self.dtype) + " is not supported on CUDA");
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

}  // extern "C"
