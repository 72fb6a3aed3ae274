// aoti_torch_cpu_hann_window (periodic, ATen's default): w[i] = 0.5 - 0.5 *
// cos(2 pi i / N) for i < N, computed in double and rounded to `dtype`
// (float32 unless given; floating dtypes only). N = 1 gives [1], N = 0 an
// empty tensor.
#include <cmath>

#include "devices/cpu/element_buffer.h"
#include "shims/common/factory_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_hann_window(int64_t window_length, int32_t* dtype,
                                                           int32_t* layout, int32_t* device,
                                                           int32_t device_index_, int32_t* pin_memory,
                                                           AtenTensorHandle* ret0) {
  (void)device_index_;
  return aoti::guarded("aoti_torch_cpu_hann_window", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(DType dt, factory_options(dtype, layout, device, pin_memory, DType::Float32));
    KILN_RETURN_IF_ERROR(aoti::window_args("hann_window", window_length, dt));
    const int64_t n = window_length;
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(std::vector<int64_t>{n}, dt));
    std::vector<double> w(static_cast<size_t>(n));
    constexpr double kPi = 3.14159265358979323846;
    for (int64_t i = 0; i < n; ++i)
      w[static_cast<size_t>(i)] =
          n == 1 ? 1.0 : 0.5 - 0.5 * std::cos(2.0 * kPi * static_cast<double>(i) / static_cast<double>(n));
    write_elements(w.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
