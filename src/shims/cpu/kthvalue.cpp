// aoti_torch_cpu_kthvalue: the k-th smallest element (1-based) of each line
// along `dim` and its position. As ATen's CPU kernel: NaN is larger than every
// number, 1 <= k <= the line's length, a reduced dimension of size 0 is
// refused, bool and complex are refused, and the results are new contiguous
// tensors of the reduced shape (keepdim keeps `dim` with size 1). Among equal
// values the position is the first such one ATen would be free to return.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/line_select.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"
#include "shims/common/select_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

template <typename T>
void kth_lines(const std::vector<T>& v, const DimSplit& split, int64_t k, std::vector<T>& out_v,
               std::vector<int64_t>& out_i) {
  std::vector<T> line;
  std::vector<int64_t> perm;
  for (int64_t l = 0; l < split.lines(); ++l) {
    gather_line(v, split, l, line);
    perm.resize(line.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::nth_element(perm.begin(), perm.begin() + (k - 1), perm.end(), [&](int64_t a, int64_t b) {
      const T x = line[static_cast<size_t>(a)], y = line[static_cast<size_t>(b)];
      if (less_nan_last(x, y)) return true;
      if (less_nan_last(y, x)) return false;
      return a < b;
    });
    const int64_t pick = perm[static_cast<size_t>(k - 1)];
    out_v[static_cast<size_t>(l)] = line[static_cast<size_t>(pick)];
    out_i[static_cast<size_t>(l)] = pick;
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_kthvalue(AtenTensorHandle self_h, int64_t k, int64_t dim,
                                                        int32_t keepdim, AtenTensorHandle* ret0,
                                                        AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu_kthvalue", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    KILN_RETURN_IF_ERROR(expect_dtype_in(*self, kAllTypes | kReducedFloat, "self", "kthvalue"));
    const int64_t size = self->dim() == 0 ? 1 : self->size(d);
    KILN_RETURN_IF_ERROR(aoti::kthvalue_line_args(size, k, d));
    const std::vector<int64_t> out_sizes = reduced_sizes(self->sizes(), d, keepdim != 0);
    return select_along(*self, d, out_sizes, ret0, ret1, [&](auto& v, const DimSplit& split, auto& out, auto& idx) {
      kth_lines(v, split, k, out, idx);
    });
  });
}

}  // extern "C"
