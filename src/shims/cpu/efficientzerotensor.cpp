// aoti_torch_cpu__efficientzerotensor: ATen returns a ZeroTensor, a tensor
// whose elements are all zero without memory behind them. Kiln has no such
// kind of tensor, so this returns an ordinary contiguous zero-filled tensor
// of the same dtype (float32 unless given) and shape: the same values to any
// reader, at the cost of the memory.
#include <cstring>

#include "devices/cpu/element_buffer.h"
#include "shims/common/factory_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__efficientzerotensor(const int64_t* size, int64_t size_len_,
                                                                    int32_t* dtype, int32_t* layout,
                                                                    int32_t* device, int32_t device_index_,
                                                                    int32_t* pin_memory,
                                                                    AtenTensorHandle* ret0) {
  (void)device_index_;
  return aoti::guarded("aoti_torch_cpu__efficientzerotensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> sizes, aoti::int_array_arg(size, size_len_, "size"));
    KILN_ASSIGN_OR_RETURN(DType dt, factory_options(dtype, layout, device, pin_memory, DType::Float32));
    KILN_RETURN_IF_ERROR(aoti::nonnegative_sizes(sizes, "size"));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, dt));
    if (out.nbytes() > 0) std::memset(out.data_ptr(), 0, out.nbytes());
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
