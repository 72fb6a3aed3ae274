// aoti_torch_cpu_repeat_interleave_Tensor: [0]*r0 ++ [1]*r1 ++ ... for a 1-d
// int32/int64 `repeats` (the gather index behind tensor.repeat_interleave),
// in repeats' dtype. output_size, when given, must equal the sum of repeats.
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_repeat_interleave_Tensor(AtenTensorHandle repeats_h,
                                                                        int64_t* output_size,
                                                                        AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_repeat_interleave_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * repeats, cpu_tensor_arg(repeats_h, "repeats"));
    if (repeats->dim() != 1)
      return aoti::invalid("argument 'repeats' has " + std::to_string(repeats->dim()) + " dimensions, expected 1");
    KILN_RETURN_IF_ERROR(index_dtype_check(*repeats, "repeats"));
    const std::vector<int64_t> r = read_elements<int64_t>(*repeats);
    int64_t total = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (r[i] < 0)
        return aoti::invalid("argument 'repeats' has a negative value " + std::to_string(r[i]) + " at position " +
                             std::to_string(i));
      if (__builtin_add_overflow(total, r[i], &total)) return aoti::invalid("argument 'repeats' sums past int64");
    }
    if (output_size != nullptr && *output_size != total)
      return aoti::invalid("argument 'output_size' is " + std::to_string(*output_size) +
                           ", but repeats sum to " + std::to_string(total));
    const int64_t sizes[1] = {total};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, repeats->dtype()));
    std::vector<int64_t> values;
    values.reserve(static_cast<size_t>(total));
    for (size_t i = 0; i < r.size(); ++i) values.insert(values.end(), static_cast<size_t>(r[i]), static_cast<int64_t>(i));
    write_elements(values.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
