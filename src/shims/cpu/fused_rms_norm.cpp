// aoti_torch_cpu__fused_rms_norm: x * rsqrt(mean(x^2) + eps) (* weight) over
// the trailing normalized_shape dims, and that rstd; checks, eps default and
// rstd's dtype and shape as shims/common/rms_norm_args.h; the output has the
// input's dtype.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/parallel_for.h"
#include "shims/common/rms_norm_args.h"
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
    const DType wdt = w ? w->dtype() : DType::Float32;
    KILN_ASSIGN_OR_RETURN(aoti::RmsNormPlan plan,
                          aoti::rms_norm_plan(x->sizes(), dt, shape, w ? &w->sizes() : nullptr, w ? &wdt : nullptr, eps));
    const DType acc = plan.acc;
    const double e = plan.eps;
    const int64_t inner = plan.inner;
    const std::vector<int64_t>& rsizes = plan.rstd_sizes;
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
