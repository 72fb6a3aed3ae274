// aoti_torch_cuda_hann_window (periodic, ATen's default for this overload):
// w[i] = 0.5 - 0.5 * cos(2 pi i / N) for i < N in `dtype` (float32 unless
// given; floating dtypes only), computed on the GPU step by step as ATen
// composes it (kernels/window_kernel.cu). N = 1 gives [1], N = 0 an empty
// tensor. Checks as shims/common/factory_args.h.
#include <optional>

#include "devices/cuda/kernels/window_kernel.h"
#include "shims/common/factory_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_hann_window(int64_t window_length, int32_t* dtype, int32_t* layout,
                                                            int32_t* device, int32_t device_index_,
                                                            int32_t* pin_memory, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_hann_window", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> dt_arg, optional_dtype_arg(dtype, "dtype"));
    const DType dt = dt_arg ? *dt_arg : DType::Float32;
    KILN_RETURN_IF_ERROR(strided_unpinned(layout, pin_memory));
    KILN_RETURN_IF_ERROR(aoti::window_args("hann_window", window_length, dt));
    KILN_ASSIGN_OR_RETURN(int dev, factory_device(device, device_index_));
    const int64_t sizes[1] = {window_length};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, dt, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(launch_hann_window(o.data, dt, window_length, current_stream(dev)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
