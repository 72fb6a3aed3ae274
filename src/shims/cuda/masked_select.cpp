// aoti_torch_cuda_masked_select, aoti_torch_cuda_masked_scatter: reading or
// writing the elements where a bool mask is true, with the CPU op's rules
// (self and mask broadcast together; source has self's dtype, any shape and
// at least as many elements as the mask has true values). An exclusive
// prefix count of the broadcast mask on the device (kernels/mask_kernel.cu)
// gives each selected element its place, and elements move as raw bytes, so
// every dtype works. Results are new tensors the caller owns: masked_scatter's
// is contiguous of the broadcast shape (ATen clones self contiguously before
// scattering); masked_select's is 1-d, its length the count of true values,
// which the host waits for (a stream synchronisation), so it cannot be
// recorded in a CUDA graph. masked_scatter reads the count back only to check
// source's length, outside graph capture and only when source has fewer
// elements than the mask; under capture a short source repeats its last
// element instead of reading past it.
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/mask_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error bool_mask_check(const TensorRef& mask) {
  if (mask.dtype != DType::Bool)
    return aoti::invalid(std::string("argument 'mask' has dtype ") + dtype_name(mask.dtype) + ", expected bool");
  return Error::Ok;
}

Error same_device(const TensorRef& t, const TensorRef& self, const char* name) {
  if (t.device_index != self.device_index)
    return aoti::invalid(std::string("argument '") + name + "' is on CUDA device " + std::to_string(t.device_index) +
                         " but self on " + std::to_string(self.device_index));
  return Error::Ok;
}

/// self and mask broadcast together, with the strides that read each over the result.
struct Broadcast {
  std::vector<int64_t> shape;
  StridedIndexer self;
  StridedIndexer mask;
  int64_t numel = 1;
};

Result<Broadcast> broadcast_pair(const TensorRef& self, const TensorRef& mask) {
  Result<std::vector<int64_t>> shape = aoti::broadcast_shapes(self.sizes, mask.sizes, "self", "mask");
  if (!shape.ok())
    return aoti::invalid("argument 'mask' of shape " + aoti::shape_string(mask.sizes) +
                         " does not broadcast with 'self' of shape " + aoti::shape_string(self.sizes));
  Broadcast b;
  b.shape = shape.value();
  for (int64_t s : b.shape) b.numel *= s;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> self_strides, broadcast_strides(self, b.shape, "self"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> mask_strides, broadcast_strides(mask, b.shape, "mask"));
  KILN_ASSIGN_OR_RETURN(b.self, indexer(b.shape, self_strides));
  KILN_ASSIGN_OR_RETURN(b.mask, indexer(b.shape, mask_strides));
  return b;
}

/// positions[0..numel] of the broadcast mask (kernels/mask_kernel.h), in a
/// buffer freed on `stream`.
Result<DeviceBuffer> mask_positions(const TensorRef& mask, const Broadcast& b, cudaStream_t stream) {
  KILN_ASSIGN_OR_RETURN(size_t bytes, mask_positions_workspace(b.numel));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer positions, DeviceBuffer::allocate(static_cast<size_t>(b.numel + 1) * 8,
                                                                       mask.device_index, stream));
  KILN_ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(bytes, mask.device_index, stream));
  KILN_RETURN_IF_ERROR(launch_mask_positions(mask.data, mask.dtype, b.mask, b.numel,
                                             static_cast<int64_t*>(positions.get()), workspace.get(), bytes, stream));
  return positions;
}

/// The mask's count of true values, read back (waits for the stream).
Result<int64_t> read_total(const DeviceBuffer& positions, int64_t numel, cudaStream_t stream) {
  int64_t total = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&total, static_cast<const int64_t*>(positions.get()) + numel,
                                            sizeof total, cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return total;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_masked_select(AtenTensorHandle self_h, AtenTensorHandle mask_h,
                                                              AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_masked_select", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef mask, read_tensor(mask_h, "mask"));
    KILN_RETURN_IF_ERROR(bool_mask_check(mask));
    KILN_RETURN_IF_ERROR(same_device(mask, self, "mask"));
    KILN_ASSIGN_OR_RETURN(Broadcast b, broadcast_pair(self, mask));
    const cudaStream_t stream = current_stream(self.device_index);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
      return set_error(Error::NotSupported,
                       "masked_select's result size depends on the data, so it cannot be recorded in a CUDA graph");
    KILN_ASSIGN_OR_RETURN(DeviceBuffer positions, mask_positions(mask, b, stream));
    KILN_ASSIGN_OR_RETURN(int64_t count, read_total(positions, b.numel, stream));
    const int64_t sizes[1] = {count};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    if (count > 0)
      KILN_RETURN_IF_ERROR(launch_masked_select(o.data, self.data, b.self, static_cast<const int64_t*>(positions.get()),
                                                b.numel, static_cast<int64_t>(self.element_bytes()), stream));
    return return_handle(out, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_masked_scatter(AtenTensorHandle self_h, AtenTensorHandle mask_h,
                                                               AtenTensorHandle source_h, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_masked_scatter", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef mask, read_tensor(mask_h, "mask"));
    KILN_ASSIGN_OR_RETURN(TensorRef source, read_tensor(source_h, "source"));
    KILN_RETURN_IF_ERROR(bool_mask_check(mask));
    if (source.dtype != self.dtype)
      return aoti::invalid(std::string("argument 'source' has dtype ") + dtype_name(source.dtype) + ", expected " +
                           dtype_name(self.dtype));
    KILN_RETURN_IF_ERROR(same_device(mask, self, "mask"));
    KILN_RETURN_IF_ERROR(same_device(source, self, "source"));
    KILN_ASSIGN_OR_RETURN(Broadcast b, broadcast_pair(self, mask));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(b.shape, self.dtype, self.device_index));
    if (b.numel == 0) return return_handle(out, ret0, "ret0");
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    const cudaStream_t stream = current_stream(self.device_index);
    KILN_ASSIGN_OR_RETURN(DeviceBuffer positions, mask_positions(mask, b, stream));
    const int64_t source_numel = source.numel();
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    // A source of at least numel elements can never run short: no need to wait for the count.
    if (capture == cudaStreamCaptureStatusNone && source_numel < b.numel) {
      KILN_ASSIGN_OR_RETURN(int64_t count, read_total(positions, b.numel, stream));
      if (count > source_numel)
        return aoti::invalid("argument 'source' has " + std::to_string(source_numel) +
                             " elements, fewer than the mask's " + std::to_string(count) + " true values");
    }
    KILN_ASSIGN_OR_RETURN(StridedIndexer source_index, indexer(source));
    KILN_RETURN_IF_ERROR(launch_masked_scatter(o.data, self.data, b.self,
                                               static_cast<const int64_t*>(positions.get()), source.data,
                                               source_index, source_numel, b.numel,
                                               static_cast<int64_t>(self.element_bytes()), stream));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
