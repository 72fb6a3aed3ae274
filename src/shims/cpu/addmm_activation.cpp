// aoti_torch_cpu__addmm_activation: relu (or exact erf gelu when use_gelu) of
// beta * self + alpha * (mat1 @ mat2), Inductor's fused linear + activation.
// As ATen's CPU kernel: the product is rounded to the dtype, then the
// activation applied and rounded again; relu keeps NaN; complex is refused.
#include <cmath>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/matmul.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__addmm_activation(AtenTensorHandle self, AtenTensorHandle mat1,
                                                                 AtenTensorHandle mat2, double beta, double alpha,
                                                                 int32_t use_gelu, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__addmm_activation", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(mat1, "mat1"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(mat2, "mat2"));
    if (a->dim() != 2 || b->dim() != 2)
      return aoti::invalid("arguments 'mat1' and 'mat2' must be 2-d, got " + a->describe() + ", " + b->describe());
    if (a->size(1) != b->size(0))
      return aoti::invalid("shape mismatch: mat1 " + aoti::shape_string(a->sizes()) + " @ mat2 " +
                           aoti::shape_string(b->sizes()));
    KILN_RETURN_IF_ERROR(same_dtype(*a, s->dtype(), "mat1"));
    KILN_RETURN_IF_ERROR(same_dtype(*b, s->dtype(), "mat2"));
    const DType dt = s->dtype();
    if (is_complex(dt) || dt == DType::Bool || (use_gelu && !is_floating(dt)))
      return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(dt) + " is not supported" +
                                                (use_gelu ? " with use_gelu" : ""));
    const std::vector<int64_t> sizes{a->size(0), b->size(1)};
    KILN_ASSIGN_OR_RETURN(Tensor init, broadcast_view(*s, sizes, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(sizes, dt));
    KILN_RETURN_IF_ERROR(matmul(result, &init, *a, *b, beta, alpha, 0));
    KILN_RETURN_IF_ERROR(visit_kind(dt, [&](auto tag) -> Error {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, Complex>) {
        return Error::NotSupported;
      } else {
        std::vector<T> y = read_elements<T>(result);
        for (T& v : y) {
          if (use_gelu) {
            if constexpr (std::is_floating_point_v<T>) v = 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2));
          } else if (v < T(0)) {
            v = T(0);
          }
        }
        write_elements(y.data(), result);
        return Error::Ok;
      }
    }));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
