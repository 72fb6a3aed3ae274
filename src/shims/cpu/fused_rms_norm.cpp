// aoti_torch_cpu__fused_rms_norm: x * rsqrt(mean(x^2) + eps) (* weight) over
// the trailing normalized_shape dims, and that rstd. As ATen's CPU kernel: eps
// defaults to the machine epsilon of the compute type (float32 for narrow
// floats), rstd has the compute type and the input's shape with the
// normalized dims kept as 1, the output has the input's dtype.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/parallel_for.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__fused_rms_norm(AtenTensorHandle input, const int64_t* normalized_shape,
                                                               int64_t normalized_shape_len_, AtenTensorHandle* weight,
                                                               double* eps, AtenTensorHandle* ret0,
                                                               AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu__fused_rms_norm", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(input, "input"));
    KILN_ASSIGN_OR_RETURN(Tensor * w, optional_cpu_tensor_arg(weight, "weight"));
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> shape,
                          aoti::int_array_arg(normalized_shape, normalized_shape_len_, "normalized_shape"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    const DType dt = x->dtype();
    if (!is_floating(dt))
      return set_error(Error::NotSupported,
                       std::string("argument 'input' has dtype ") + dtype_name(dt) + ", expected a floating dtype");
    const int64_t k = static_cast<int64_t>(shape.size());
    bool matches = k >= 1 && k <= x->dim();
    for (int64_t i = 0; matches && i < k; ++i) matches = x->size(x->dim() - k + i) == shape[i];
    if (!matches)
      return aoti::invalid("argument 'normalized_shape' " + aoti::shape_string(shape) +
                           " is not the trailing shape of input " + aoti::shape_string(x->sizes()));
    if (w && w->sizes() != std::vector<int64_t>(shape.begin(), shape.end()))
      return aoti::invalid("argument 'weight' has shape " + aoti::shape_string(w->sizes()) + ", expected " +
                           aoti::shape_string(shape));
    if (w && !is_floating(w->dtype()))
      return aoti::invalid(std::string("argument 'weight' has dtype ") + dtype_name(w->dtype()));
    const DType acc = dt == DType::Float64 ? DType::Float64 : DType::Float32;
    const double e = eps ? *eps
                         : (acc == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                  : static_cast<double>(std::numeric_limits<float>::epsilon()));
    int64_t inner = 1;
    for (int64_t s : shape) inner *= s;
    std::vector<int64_t> rsizes(x->sizes());
    for (int64_t i = 0; i < k; ++i) rsizes[x->dim() - k + i] = 1;
    const int64_t rows = inner == 0 ? 0 : x->numel() / inner;
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(x->sizes(), dt));
    KILN_ASSIGN_OR_RETURN(Tensor rstd, new_cpu_tensor(rsizes, acc));
    std::vector<double> v = read_elements<double>(*x);
    const std::vector<double> g = w ? read_elements<double>(*w) : std::vector<double>();
    std::vector<double> r(static_cast<size_t>(rstd.numel()));
    if (inner == 0) {
      for (double& q : r) q = 1.0 / std::sqrt(std::nan("") + e);
    }
    KILN_RETURN_IF_ERROR(parallel_for(rows, 16, [&](int64_t begin, int64_t end) -> Error {
      for (int64_t row = begin; row < end; ++row) {
        double* p = v.data() + row * inner;
        double ss = 0;
        for (int64_t i = 0; i < inner; ++i) ss += p[i] * p[i];
        double q = 1.0 / std::sqrt(ss / static_cast<double>(inner) + e);
        if (acc == DType::Float32) q = static_cast<float>(q);
        r[static_cast<size_t>(row)] = q;
        for (int64_t i = 0; i < inner; ++i) p[i] = p[i] * q * (w ? g[static_cast<size_t>(i)] : 1.0);
      }
      return Error::Ok;
    }));
    write_elements(v.data(), out);
    write_elements(r.data(), rstd);
    KILN_RETURN_IF_ERROR(return_tensor(std::move(out), ret0, "ret0"));
    const Error err = return_tensor(std::move(rstd), ret1, "ret1");
    if (err != Error::Ok) {
      aoti_torch_delete_tensor_object(*ret0);
      *ret0 = nullptr;
    }
    return err;
  });
}

}  // extern "C"
