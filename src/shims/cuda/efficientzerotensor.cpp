// aoti_torch_cuda__efficientzerotensor: ATen returns a ZeroTensor, a tensor
// whose elements are all zero without memory behind them. Kiln has no such
// kind of tensor, so this returns an ordinary contiguous CUDA tensor of the
// same dtype (float32 unless given) and shape, zeroed by a memset on the
// current stream (which a CUDA graph captures): the same values to any
// reader, at the cost of the memory. Size checks as
// shims/common/factory_args.h.
#include <optional>

#include "devices/cuda/cuda_check.h"
#include "shims/common/factory_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__efficientzerotensor(const int64_t* size, int64_t size_len_,
                                                                     int32_t* dtype, int32_t* layout,
                                                                     int32_t* device, int32_t device_index_,
                                                                     int32_t* pin_memory, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__efficientzerotensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> sizes, aoti::int_array_arg(size, size_len_, "size"));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> dt, optional_dtype_arg(dtype, "dtype"));
    KILN_RETURN_IF_ERROR(strided_unpinned(layout, pin_memory));
    KILN_RETURN_IF_ERROR(aoti::nonnegative_sizes(sizes, "size"));
    KILN_ASSIGN_OR_RETURN(int dev, factory_device(device, device_index_));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, dt ? *dt : DType::Float32, dev));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    const size_t nbytes = static_cast<size_t>(o.numel()) * o.element_bytes();
    if (nbytes > 0) {
      KILN_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(o.data, 0, nbytes, current_stream(dev)));
    }
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
