// aoti_torch_cuda_fractional_max_pool{2,3}d: maxima of kernel_size windows
// placed pseudo-randomly by random_samples (N, C, 2 or 3: one sample per
// plane and spatial dim, (W, H) in 2-d and (T, H, W) in 3-d), with the flat
// position of each maximum within its plane (int64); one thread per result
// element (kernels/pool_kernel.cu), no synchronisation. Arguments are checked
// as the CPU op checks them (shims/common/pool_args.h). As ATen's CUDA
// kernels: the window starts are computed in float32 (float64 for float64
// inputs); a NaN wins (the last of a window), otherwise the first strict
// maximum; floating dtypes only; both results are contiguous, whatever the
// input's layout. A sample outside [0, 1) is not reported (ATen's CUDA
// kernel does not check either; the CPU op does): its windows are clamped
// into the input. The caller owns both results.
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

AOTITorchError fractional_max_pool(const char* fn, int spatial, AtenTensorHandle self_h, const int64_t* kernel_size,
                                   int64_t kernel_size_len, const int64_t* output_size, int64_t output_size_len,
                                   AtenTensorHandle samples_h, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef samples, read_tensor(samples_h, "random_samples"));
    KILN_RETURN_IF_ERROR(pool_dtype(self.dtype, false));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(samples, self, "random_samples", "self"));
    KILN_ASSIGN_OR_RETURN(Planes p, planes_of(self, spatial));
    KILN_ASSIGN_OR_RETURN(ap::Fractional f, ap::fractional_args(p, spatial, kernel_size, kernel_size_len, output_size,
                                                                output_size_len, samples.sizes, samples.describe()));
    const std::vector<int64_t> sizes = ap::result_sizes(p, f.out, spatial);
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_result(self, sizes, self.dtype, false));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_result(self, sizes, DType::Int64, false));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef ix, read_tensor(indices.get(), "ret1"));
    PoolGeometry g = geometry(self, p, f.out, v.strides, spatial, false);
    FractionalSamples s;
    for (int i = 0; i < 3; ++i) {
      g.kernel[i] = f.kernel[i];
      s.strides[i] = samples.strides[static_cast<size_t>(i)];
      s.column[i] = ap::fractional_sample_column(spatial, i);
    }
    KILN_RETURN_IF_ERROR(launch_fractional_max_pool(self.data, samples.data, s, v.data,
                                                    static_cast<int64_t*>(ix.data), self.dtype, g,
                                                    current_stream(self.device_index)));
    *ret0 = values.release();
    *ret1 = indices.release();
    return Error::Ok;
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fractional_max_pool2d(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size,
    int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return fractional_max_pool("aoti_torch_cuda_fractional_max_pool2d", 2, self, kernel_size, kernel_size_len_,
                             output_size, output_size_len_, random_samples, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fractional_max_pool3d(
    AtenTensorHandle self, const int64_t* kernel_size, int64_t kernel_size_len_, const int64_t* output_size,
    int64_t output_size_len_, AtenTensorHandle random_samples, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return fractional_max_pool("aoti_torch_cuda_fractional_max_pool3d", 3, self, kernel_size, kernel_size_len_,
                             output_size, output_size_len_, random_samples, ret0, ret1);
}

}  // extern "C"
