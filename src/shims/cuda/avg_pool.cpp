// aoti_torch_cuda_avg_pool{2,3}d and aoti_torch_cuda__adaptive_avg_pool{2,3}d:
// window means over each (n, c) plane, one thread per result element
// (kernels/pool_kernel.cu), with the CPU op's arguments and messages
// (shims/common/pool_args.h). As ATen's CUDA kernels: windows clipped to the
// input, divided by divisor_override, else by the window size with
// (count_include_pad) or without padding; floating dtypes only (ATen's CUDA
// kernels take no integers), summed in float (float64 for float64); 2-d
// results of a batched channels-last input are channels-last, 3-d results
// contiguous. The caller owns the returned tensor.
#include <string>
#include <vector>

#include "devices/cuda/kernels/pool_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/pooling.h"

using namespace kiln;
using namespace kiln::cudadev;
using namespace kiln::cudadev::pool;
namespace ap = kiln::aoti::pool;

namespace {

AOTITorchError avg_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* kernel_size,
                        int64_t kernel_size_len, const int64_t* stride, int64_t stride_len, const int64_t* padding,
                        int64_t padding_len, int32_t ceil_mode, int32_t count_include_pad,
                        const int64_t* divisor_override, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self.dtype, false));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims k, ap::dims_arg(kernel_size, kernel_size_len, spatial, "kernel_size", 1));
    KILN_RETURN_IF_ERROR(ap::positive(k, "kernel_size"));
    KILN_ASSIGN_OR_RETURN(Dims s, ap::dims_arg(stride, stride_len, spatial, "stride", 1, &k));
    KILN_RETURN_IF_ERROR(ap::positive(s, "stride"));
    KILN_ASSIGN_OR_RETURN(Dims pad, ap::dims_arg(padding, padding_len, spatial, "padding", 0));
    if (divisor_override && *divisor_override == 0) return aoti::invalid("argument 'divisor_override' is zero");
    KILN_ASSIGN_OR_RETURN(Dims out, ap::window_output(p, k, s, pad, Dims{1, 1, 1}, ceil_mode != 0));
    // ATen's avg_pool2d keeps the input's memory format, avg_pool3d allocates contiguous.
    const bool cl = channels_last_result(self, spatial, spatial == 2);
    const std::vector<int64_t> sizes = ap::result_sizes(p, out, spatial);
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_result(self, sizes, self.dtype, cl));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    PoolGeometry g = geometry(self, p, out, r.strides, spatial, cl);
    for (int i = 0; i < 3; ++i) {
      g.kernel[i] = k[i];
      g.stride[i] = s[i];
      g.pad[i] = pad[i];
    }
    g.count_include_pad = count_include_pad != 0;
    g.divisor = divisor_override ? *divisor_override : 0;
    KILN_RETURN_IF_ERROR(launch_avg_pool(self.data, r.data, self.dtype, g, current_stream(self.device_index)));
    return return_handle(result, ret0, "ret0");
  });
}

AOTITorchError adaptive_avg_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* output_size,
                                 int64_t output_size_len, AtenTensorHandle* ret0) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self.dtype, false));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims out, ap::exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
    // ATen's CUDA adaptive_avg_pool2d keeps a channels-last input's format, the 3-d one allocates contiguous.
    const bool cl = channels_last_result(self, spatial, spatial == 2);
    const std::vector<int64_t> sizes = ap::result_sizes(p, out, spatial);
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_result(self, sizes, self.dtype, cl));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(result.get(), "ret0"));
    PoolGeometry g = geometry(self, p, out, r.strides, spatial, cl);
    g.adaptive = true;
    KILN_RETURN_IF_ERROR(launch_avg_pool(self.data, r.data, self.dtype, g, current_stream(self.device_index)));
    return return_handle(result, ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_avg_pool2d(AtenTensorHandle self, const int64_t* kernel_size,
                                                           int64_t kernel_size_len_, const int64_t* stride,
                                                           int64_t stride_len_, const int64_t* padding,
                                                           int64_t padding_len_, int32_t ceil_mode,
                                                           int32_t count_include_pad, int64_t* divisor_override,
                                                           AtenTensorHandle* ret0) {
  return avg_pool("aoti_torch_cuda_avg_pool2d", 2, self, kernel_size, kernel_size_len_, stride, stride_len_, padding,
                  padding_len_, ceil_mode, count_include_pad, divisor_override, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_avg_pool3d(AtenTensorHandle self, const int64_t* kernel_size,
                                                           int64_t kernel_size_len_, const int64_t* stride,
                                                           int64_t stride_len_, const int64_t* padding,
                                                           int64_t padding_len_, int32_t ceil_mode,
                                                           int32_t count_include_pad, int64_t* divisor_override,
                                                           AtenTensorHandle* ret0) {
  return avg_pool("aoti_torch_cuda_avg_pool3d", 3, self, kernel_size, kernel_size_len_, stride, stride_len_, padding,
                  padding_len_, ceil_mode, count_include_pad, divisor_override, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__adaptive_avg_pool2d(AtenTensorHandle self,
                                                                     const int64_t* output_size,
                                                                     int64_t output_size_len_,
                                                                     AtenTensorHandle* ret0) {
  return adaptive_avg_pool("aoti_torch_cuda__adaptive_avg_pool2d", 2, self, output_size, output_size_len_, ret0);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__adaptive_avg_pool3d(AtenTensorHandle self,
                                                                     const int64_t* output_size,
                                                                     int64_t output_size_len_,
                                                                     AtenTensorHandle* ret0) {
  return adaptive_avg_pool("aoti_torch_cuda__adaptive_avg_pool3d", 3, self, output_size, output_size_len_, ret0);
}

}  // extern "C"
