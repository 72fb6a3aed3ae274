// aoti_torch_cpu_topk: the k largest (or smallest) elements of each line
// along `dim` and their positions (sampling's top-k, beam search). As ATen's
// CPU kernel: NaN counts as larger than every number, 0 <= k <= the line's
// length (a 0-d input has one element, and returns it even for k = 0), bool
// and complex are refused, and the results are new contiguous tensors. The
// k elements always come sorted (best first, equal values by position), which
// sorted=False allows as well.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/line_select.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

template <typename T>
void topk_lines(const std::vector<T>& v, const DimSplit& split, int64_t k, bool largest, std::vector<T>& out_v,
                std::vector<int64_t>& out_i) {
  std::vector<T> line;
  std::vector<int64_t> perm;
  for (int64_t l = 0; l < split.lines(); ++l) {
    gather_line(v, split, l, line);
    perm.resize(line.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    auto before = [&](int64_t a, int64_t b) {
      const T x = line[static_cast<size_t>(a)], y = line[static_cast<size_t>(b)];
      if (largest ? greater_nan_first(x, y) : less_nan_last(x, y)) return true;
      if (largest ? greater_nan_first(y, x) : less_nan_last(y, x)) return false;
      return a < b;
    };
    std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), before);
    // Output line l has the same outer/inner position with `k` elements.
    const int64_t o = l / split.inner, j = l % split.inner;
    for (int64_t i = 0; i < k; ++i) {
      const size_t at = static_cast<size_t>((o * k + i) * split.inner + j);
      out_v[at] = line[static_cast<size_t>(perm[static_cast<size_t>(i)])];
      out_i[at] = perm[static_cast<size_t>(i)];
    }
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_topk(AtenTensorHandle self_h, int64_t k, int64_t dim,
                                                    int32_t largest, int32_t sorted, AtenTensorHandle* ret0,
                                                    AtenTensorHandle* ret1) {
  (void)sorted;
  return aoti::guarded("aoti_torch_cpu_topk", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    KILN_RETURN_IF_ERROR(expect_dtype_in(*self, kAllTypes | kReducedFloat, "self", "topk"));
    const int64_t size = self->dim() == 0 ? 1 : self->size(d);
    if (k < 0 || k > size)
      return aoti::invalid("argument 'k' is " + std::to_string(k) + ", out of range for dimension " +
                           std::to_string(d) + " of size " + std::to_string(size));
    if (self->dim() == 0) k = 1;  // ATen returns the element itself
    std::vector<int64_t> out_sizes = self->sizes();
    if (self->dim() > 0) out_sizes[static_cast<size_t>(d)] = k;
    return select_along(*self, d, out_sizes, ret0, ret1, [&](auto& v, const DimSplit& split, auto& out, auto& idx) {
      if (k > 0) topk_lines(v, split, k, largest != 0, out, idx);
    });
  });
}

}  // extern "C"
