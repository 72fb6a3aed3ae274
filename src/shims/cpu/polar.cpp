// aoti_torch_cpu_polar: abs * (cos(angle) + i sin(angle)), broadcast, from
// two float32 or two float64 tensors (complex64 / complex128 result), laid
// out as TensorIterator would.
#include <cmath>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_polar(AtenTensorHandle abs, AtenTensorHandle angle,
                                                     AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_polar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * r, cpu_tensor_arg(abs, "abs"));
    KILN_ASSIGN_OR_RETURN(Tensor * theta, cpu_tensor_arg(angle, "angle"));
    if (r->dtype() != DType::Float32 && r->dtype() != DType::Float64)
      return aoti::invalid(std::string("argument 'abs' has dtype ") + dtype_name(r->dtype()) +
                           ", expected float32 or float64");
    KILN_RETURN_IF_ERROR(same_dtype(*theta, r->dtype(), "angle"));
    const DType out_dtype = r->dtype() == DType::Float32 ? DType::Complex64 : DType::Complex128;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                          broadcast_shapes(r->sizes(), theta->sizes(), "abs", "angle"));
    KILN_ASSIGN_OR_RETURN(Tensor rv, broadcast_view(*r, shape, "abs"));
    KILN_ASSIGN_OR_RETURN(Tensor tv, broadcast_view(*theta, shape, "angle"));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_elementwise_result(shape, out_dtype, {rv, tv}));
    const std::vector<double> m = read_elements<double>(rv);
    const std::vector<double> t = read_elements<double>(tv);
    std::vector<Complex> z(m.size());
    for (size_t i = 0; i < z.size(); ++i) z[i] = Complex(m[i] * std::cos(t[i]), m[i] * std::sin(t[i]));
    write_elements(z.data(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
