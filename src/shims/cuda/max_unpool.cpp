// aoti_torch_cuda_max_unpool{2,3}d: scatters each pooled value to its flat
// position (indices, int64, within its plane of output_size) in a zeroed
// result, the inverse of max_pool's indices, with the CPU op's arguments and
// messages (shims/common/pool_args.h): one memset and one scatter kernel
// (kernels/pool_kernel.cu) on the current stream. The result is contiguous,
// as ATen's CUDA kernels make it for any input layout. A position written
// twice keeps one of its values (unspecified which, as on ATen's CUDA).
// An index outside the plane: outside a CUDA graph capture the op is an
// error naming it (one synchronisation reads the kernel's flag); under
// capture nothing may synchronise, and such an element is skipped. stride
// and padding of the 3-d op are checked only (ATen uses them for shape
// checks). The caller owns the returned tensor.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/kernels/pool_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/pooling.h"

using namespace kiln;
using namespace kiln::cudadev;
using namespace kiln::cudadev::pool;
namespace ap = kiln::aoti::pool;

namespace {

// The value of input element `k` (row-major over self's sizes) of `indices`,
// read back from the device for an error message.
Result<int64_t> index_at(const TensorRef& indices, const Planes& p, const int64_t strides[5], int64_t k,
                         cudaStream_t stream) {
  int64_t x[3];
  for (int i = 2; i >= 0; --i) {
    x[i] = k % p.in[i];
    k /= p.in[i];
  }
  const int64_t c = k % p.channels, n = k / p.channels;
  const int64_t off = n * strides[0] + c * strides[1] + x[0] * strides[2] + x[1] * strides[3] + x[2] * strides[4];
  int64_t value = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&value, static_cast<const int64_t*>(indices.data) + off, sizeof(value),
                                            cudaMemcpyDeviceToHost, stream));
  KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return value;
}

AOTITorchError max_unpool(const char* fn, int spatial, AtenTensorHandle self_h, AtenTensorHandle indices_h,
                          const int64_t* output_size, int64_t output_size_len, const int64_t* stride,
                          int64_t stride_len, const int64_t* padding, int64_t padding_len, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef indices, read_tensor(indices_h, "indices"));
    KILN_RETURN_IF_ERROR(pool_dtype(self.dtype, true));
    KILN_RETURN_IF_ERROR(ap::unpool_indices_dtype(indices.dtype));
    if (indices.device_index != self.device_index)
      return aoti::invalid("argument 'indices' is on CUDA device " + std::to_string(indices.device_index) +
                           " but self on " + std::to_string(self.device_index));
    KILN_RETURN_IF_ERROR(ap::unpool_indices_shape(indices.sizes, self.sizes));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims out, ap::exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
    KILN_RETURN_IF_ERROR(ap::unpool_stride_padding(spatial, stride, stride_len, padding, padding_len));
    const std::vector<int64_t> sizes = ap::result_sizes(p, out, spatial);
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_result(self, sizes, self.dtype, false));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    const cudaStream_t stream = current_stream(self.device_index);
    const int64_t out_numel = r.numel();
    if (out_numel > 0)
      KILN_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(r.data, 0, static_cast<size_t>(out_numel) * r.element_bytes(), stream));
    const int64_t in_numel = self.numel();
    if (in_numel == 0) return return_handle(result, ret0, "ret0");

    PoolGeometry g = geometry(self, p, out, r.strides, spatial, false);
    int64_t index_strides[5];
    five_strides(indices.strides, p.batched, spatial, index_strides);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) {
      KILN_RETURN_IF_ERROR(launch_max_unpool(self.data, static_cast<const int64_t*>(indices.data), index_strides,
                                             r.data, self.dtype, g, nullptr, stream));
      return return_handle(result, ret0, "ret0");
    }
    KILN_ASSIGN_OR_RETURN(DeviceBuffer flag,
                          DeviceBuffer::allocate(sizeof(unsigned long long), self.device_index, stream));
    auto* first_bad = static_cast<unsigned long long*>(flag.get());
    KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_bad, 0xFF, sizeof(unsigned long long), stream));
    KILN_RETURN_IF_ERROR(launch_max_unpool(self.data, static_cast<const int64_t*>(indices.data), index_strides,
                                           r.data, self.dtype, g, first_bad, stream));
    unsigned long long bad = 0;
    KILN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&bad, first_bad, sizeof(bad), cudaMemcpyDeviceToHost, stream));
    KILN_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    if (bad != std::numeric_limits<unsigned long long>::max()) {
      const int64_t out_plane = out[0] * out[1] * out[2];
      KILN_ASSIGN_OR_RETURN(int64_t at, index_at(indices, p, index_strides, static_cast<int64_t>(bad), stream));
      return ap::unpool_index_outside(at, out_plane);
    }
    return return_handle(result, ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_unpool2d(AtenTensorHandle self, AtenTensorHandle indices,
                                                             const int64_t* output_size, int64_t output_size_len_,
                                                             AtenTensorHandle* ret0) {
  return max_unpool("aoti_torch_cuda_max_unpool2d", 2, self, indices, output_size, output_size_len_, nullptr, 0,
                    nullptr, 0, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_unpool3d(AtenTensorHandle self, AtenTensorHandle indices,
                                                             const int64_t* output_size, int64_t output_size_len_,
                                                             const int64_t* stride, int64_t stride_len_,
                                                             const int64_t* padding, int64_t padding_len_,
                                                             AtenTensorHandle* ret0) {
  return max_unpool("aoti_torch_cuda_max_unpool3d", 3, self, indices, output_size, output_size_len_, stride,
                    stride_len_, padding, padding_len_, ret0);
}

}  // extern "C"
