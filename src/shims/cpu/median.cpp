// aoti_torch_cpu_median, aoti_torch_cpu_nanmedian: the median of all elements
// as a 0-d tensor of the input's dtype (the header's shims are the overloads
// without `dim`). As ATen: the lower of the two middle values for an even
// count; median is NaN when any element is NaN, nanmedian ignores NaNs and is
// NaN only when nothing else is left; bool and complex are refused. An empty
// input gives ATen's NaN, which for integer dtypes is the value x86 converts
// NaN to (the lowest int32 / int64, 0 for narrower types).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"
#include "shims/common/select_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

AOTITorchError median_impl(const char* fn, AtenTensorHandle self_h, AtenTensorHandle* ret0, bool ignore_nan) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_RETURN_IF_ERROR(
        expect_dtype_in(*self, kAllTypes | kReducedFloat, "self", ignore_nan ? "nanmedian" : "median"));
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(std::vector<int64_t>{}, self->dtype()));
    if (is_floating(self->dtype())) {
      std::vector<double> v = read_elements<double>(*self);
      double result = std::numeric_limits<double>::quiet_NaN();
      const auto nan_end = std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); });
      const bool had_nan = nan_end != v.end();
      v.erase(nan_end, v.end());
      if (!v.empty() && (ignore_nan || !had_nan)) {
        const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
        std::nth_element(v.begin(), mid, v.end());
        result = *mid;
      }
      write_elements(&result, out);
    } else {
      std::vector<int64_t> v = read_elements<int64_t>(*self);
      int64_t result = aoti::empty_median_integer(self->dtype());
      if (!v.empty()) {
        const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
        std::nth_element(v.begin(), mid, v.end());
        result = *mid;
      }
      write_elements(&result, out);
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_median(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return median_impl("aoti_torch_cpu_median", self, ret0, false);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_nanmedian(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return median_impl("aoti_torch_cpu_nanmedian", self, ret0, true);
}

}  // extern "C"
