// aoti_torch_cpu_hann_window (periodic, ATen's default): w[i] = 0.5 - 0.5 *
// cos(2 pi i / N) for i < N in `dtype` (float32 unless given; floating dtypes
// only), each step rounded to the dtype as ATen composes it
// (shims/common/window_value.h). N = 1 gives [1], N = 0 an empty tensor.
#include <cmath>

#include "core/half_float.h"
#include "devices/cpu/element_buffer.h"
#include "shims/common/factory_args.h"
#include "shims/common/window_value.h"
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
    for (int64_t i = 0; i < n; ++i) {
      double v = 0;
      switch (dt) {
        case DType::Float64: v = aoti::hann_value<double>(i, n, [](double x) { return x; }); break;
        case DType::Float16:
          v = aoti::hann_value<float>(i, n, [](float x) { return half_to_float(float_to_half(x)); });
          break;
        case DType::BFloat16:
          v = aoti::hann_value<float>(i, n, [](float x) { return bf16_to_float(float_to_bf16(x)); });
          break;
        default: v = aoti::hann_value<float>(i, n, [](float x) { return x; }); break;
      }
      w[static_cast<size_t>(i)] = v;
    }
    write_elements(w.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
