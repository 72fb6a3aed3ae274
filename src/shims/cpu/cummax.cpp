// aoti_torch_cpu_cummax, aoti_torch_cpu_cummin: the running maximum (minimum)
// along `dim` and the position it was last reached at. As ATen's CPU kernel:
// an element equal to the running value takes over (ties give the LAST
// position), a NaN takes over and then stays, since nothing compares above
// it; complex is refused; both results are new contiguous tensors, the
// indices int64.
#include <cstdint>
#include <vector>

#include "shims/common/cum_extreme_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

template <typename T>
void running_extreme(std::vector<T>& v, std::vector<int64_t>& idx, const DimSplit& split, bool max) {
  for (int64_t l = 0; l < split.lines(); ++l) {
    const int64_t start = split.line_start(l);
    T best{};
    int64_t best_i = 0;
    for (int64_t i = 0; i < split.size; ++i) {
      const size_t at = static_cast<size_t>(start + i * split.inner);
      const T x = v[at];
      if (i == 0 || is_nan_value(x) || (max ? x >= best : x <= best)) {
        best = x;
        best_i = i;
      }
      v[at] = best;
      idx[at] = best_i;
    }
  }
}

AOTITorchError cum_extreme(const char* fn, AtenTensorHandle self_h, int64_t dim, AtenTensorHandle* ret0,
                           AtenTensorHandle* ret1, bool max) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    KILN_RETURN_IF_ERROR(aoti::cum_extreme_dtype_check(self->dtype(), max, "the CPU"));
    KILN_ASSIGN_OR_RETURN(Tensor values, new_cpu_tensor(self->sizes(), self->dtype()));
    KILN_ASSIGN_OR_RETURN(Tensor indices, new_cpu_tensor(self->sizes(), DType::Int64));
    const DimSplit split = DimSplit::of(self->sizes(), self->dim() == 0 ? -1 : d);
    std::vector<int64_t> idx(static_cast<size_t>(self->numel()), 0);
    if (is_floating(self->dtype())) {
      std::vector<double> v = read_elements<double>(*self);
      running_extreme(v, idx, split, max);
      write_elements(v.data(), values);
    } else {
      std::vector<int64_t> v = read_elements<int64_t>(*self);
      running_extreme(v, idx, split, max);
      write_elements(v.data(), values);
    }
    write_elements(idx.data(), indices);
    KILN_RETURN_IF_ERROR(return_tensor(std::move(values), ret0, "ret0"));
    return return_tensor(std::move(indices), ret1, "ret1");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cummax(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
                                                      AtenTensorHandle* ret1) {
  return cum_extreme("aoti_torch_cpu_cummax", self, dim, ret0, ret1, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cummin(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
                                                      AtenTensorHandle* ret1) {
  return cum_extreme("aoti_torch_cpu_cummin", self, dim, ret0, ret1, false);
}

}  // extern "C"
