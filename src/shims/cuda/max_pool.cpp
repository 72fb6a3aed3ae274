// aoti_torch_cuda_max_pool{2,3}d_with_indices and adaptive_max_pool{2,3}d:
// window maxima over each (n, c) plane with the flat position of the maximum
// within its plane (int64), one thread per result element
// (kernels/pool_kernel.cu), with the CPU op's arguments and messages
// (shims/common/pool_args.h). As ATen's CUDA kernels: a NaN wins (the last
// NaN of a window), otherwise the first strict maximum; dilation and
// ceil_mode as ATen; max_pool{2,3}d and adaptive_max_pool2d give a batched
// channels-last input channels-last results, adaptive_max_pool3d contiguous
// ones. Integer inputs (int8, uint8, int16, int32, int64) are taken by
// max_pool only, as ATen's CUDA kernels. The caller owns both results.
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

// Allocates values and indices (same sizes and layout), runs the kernel with
// `g` (geometry filled in here) and hands both out.
Error run(const TensorRef& self, const Planes& p, const Dims& out, int spatial, bool cl, PoolGeometry g,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
  const std::vector<int64_t> sizes = ap::result_sizes(p, out, spatial);
  KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_result(self, sizes, self.dtype, cl));
  KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_result(self, sizes, DType::Int64, cl));
  KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
  KILN_ASSIGN_OR_RETURN(TensorRef i, read_tensor(indices.get(), "ret1"));
  const PoolGeometry shape = geometry(self, p, out, v.strides, spatial, cl);
  g.batch = shape.batch;
  g.channels = shape.channels;
  for (int d = 0; d < 3; ++d) {
    g.in[d] = shape.in[d];
    g.out[d] = shape.out[d];
  }
  for (int d = 0; d < 5; ++d) {
    g.in_strides[d] = shape.in_strides[d];
    g.out_strides[d] = shape.out_strides[d];
  }
  g.channels_last = cl;
  KILN_RETURN_IF_ERROR(launch_max_pool(self.data, v.data, static_cast<int64_t*>(i.data), self.dtype, g,
                                       current_stream(self.device_index)));
  *ret0 = values.release();
  *ret1 = indices.release();
  return Error::Ok;
}

AOTITorchError max_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* kernel_size,
                        int64_t kernel_size_len, const int64_t* stride, int64_t stride_len, const int64_t* padding,
                        int64_t padding_len, const int64_t* dilation, int64_t dilation_len, int32_t ceil_mode,
                        AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self.dtype, true));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims k, ap::dims_arg(kernel_size, kernel_size_len, spatial, "kernel_size", 1));
    KILN_RETURN_IF_ERROR(ap::positive(k, "kernel_size"));
    KILN_ASSIGN_OR_RETURN(Dims s, ap::dims_arg(stride, stride_len, spatial, "stride", 1, &k));
    KILN_RETURN_IF_ERROR(ap::positive(s, "stride"));
    KILN_ASSIGN_OR_RETURN(Dims pad, ap::dims_arg(padding, padding_len, spatial, "padding", 0));
    KILN_ASSIGN_OR_RETURN(Dims dil, ap::dims_arg(dilation, dilation_len, spatial, "dilation", 1));
    KILN_RETURN_IF_ERROR(ap::positive(dil, "dilation"));
    KILN_ASSIGN_OR_RETURN(Dims out, ap::window_output(p, k, s, pad, dil, ceil_mode != 0));
    PoolGeometry g;
    for (int i = 0; i < 3; ++i) {
      g.kernel[i] = k[i];
      g.stride[i] = s[i];
      g.pad[i] = pad[i];
      g.dilation[i] = dil[i];
    }
    return run(self, p, out, spatial, channels_last_result(self, spatial, true), g, ret0, ret1);
  });
}

AOTITorchError adaptive_max_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* output_size,
                                 int64_t output_size_len, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_RETURN_IF_ERROR(pool_dtype(self.dtype, false));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(self, spatial));
    KILN_ASSIGN_OR_RETURN(Dims out, ap::exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
    PoolGeometry g;
    g.adaptive = true;
    // ATen's CUDA adaptive_max_pool2d keeps a channels-last input's format, the 3-d one allocates contiguous.
    return run(self, p, out, spatial, channels_last_result(self, spatial, spatial == 2), g, ret0, ret1);
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_pool2d_with_indices(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return max_pool("aoti_torch_cuda_max_pool2d_with_indices", 2, self, kernel_size, kernel_size_len_, stride,
                  stride_len_, padding, padding_len_, dilation, dilation_len_, ceil_mode, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_max_pool3d_with_indices(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* stride,
    int64_t stride_len_, const int64_t* padding, int64_t padding_len_, const int64_t* dilation, int64_t dilation_len_,
    int32_t ceil_mode, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return max_pool("aoti_torch_cuda_max_pool3d_with_indices", 3, self, kernel_size, kernel_size_len_, stride,
                  stride_len_, padding, padding_len_, dilation, dilation_len_, ceil_mode, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_adaptive_max_pool2d(AtenTensorHandle self, const int64_t* output_size,
                                                                    int64_t output_size_len_, AtenTensorHandle* ret0,
                                                                    AtenTensorHandle* ret1) {
  return adaptive_max_pool("aoti_torch_cuda_adaptive_max_pool2d", 2, self, output_size, output_size_len_, ret0,
                           ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_adaptive_max_pool3d(AtenTensorHandle self, const int64_t* output_size,
                                                                    int64_t output_size_len_, AtenTensorHandle* ret0,
                                                                    AtenTensorHandle* ret1) {
  return adaptive_max_pool("aoti_torch_cuda_adaptive_max_pool3d", 3, self, output_size, output_size_len_, ret0,
                           ret1);
}

}  // extern "C"
