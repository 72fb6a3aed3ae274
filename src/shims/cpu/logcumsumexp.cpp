// aoti_torch_cpu_logcumsumexp: log(cumsum(exp(x))) along `dim`, computed
// without overflow as a running log-add-exp in double or complex<double>. As
// ATen: floating and complex dtypes only, the result has the input's dtype and
// is a new contiguous tensor; -inf terms add nothing, +inf wins, NaN spreads.
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  const double lo = std::min(a, b), hi = std::max(a, b);
  // Both infinite with the same sign: exp(lo - hi) would be exp(nan).
  if (lo == hi && !std::isfinite(lo)) return a;
  return hi + std::log1p(std::exp(lo - hi));
}

// log(1 + z) without losing precision when |z| is small.
Complex log1p_complex(Complex z) {
  const double x = z.real(), y = z.imag();
  return {0.5 * std::log1p(x * (2.0 + x) + y * y), std::atan2(y, 1.0 + x)};
}

Complex log_add_exp(Complex a, Complex b) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(a.real()) || std::isnan(a.imag()) || std::isnan(b.real()) || std::isnan(b.imag())) return {nan, nan};
  // On equal real parts `a` (the running sum) is the smaller, as in ATen.
  const Complex lo = b.real() < a.real() ? b : a;
  const Complex hi = b.real() < a.real() ? a : b;
  if (!std::isfinite(lo.real()) && lo.real() == hi.real()) {
    // Both real parts -inf: the sum is exp(-inf) = 0 whatever the phases;
    // ATen keeps the running sum's.
    if (lo.real() < 0) return lo;
    return std::log(std::exp(lo) + std::exp(hi));
  }
  return log1p_complex(std::exp(lo - hi)) + hi;
}

template <typename T>
void scan_lines(std::vector<T>& v, const DimSplit& split) {
  for (int64_t l = 0; l < split.lines(); ++l) {
    const int64_t start = split.line_start(l);
    T acc = T(-std::numeric_limits<double>::infinity());  // exp(acc) = 0
    for (int64_t i = 0; i < split.size; ++i) {
      T& x = v[static_cast<size_t>(start + i * split.inner)];
      acc = log_add_exp(acc, x);
      x = acc;
    }
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_logcumsumexp(AtenTensorHandle self_h, int64_t dim,
                                                            AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_logcumsumexp", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    if (!is_floating(self->dtype()) && !is_complex(self->dtype()))
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self->dtype()) +
                           ", which logcumsumexp does not support (floating and complex only)");
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(self->sizes(), self->dtype()));
    const DimSplit split = DimSplit::of(self->sizes(), self->dim() == 0 ? -1 : d);
    if (is_complex(self->dtype())) {
      std::vector<Complex> v = read_elements<Complex>(*self);
      scan_lines(v, split);
      write_elements(v.data(), out);
    } else {
      std::vector<double> v = read_elements<double>(*self);
      scan_lines(v, split);
      write_elements(v.data(), out);
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
