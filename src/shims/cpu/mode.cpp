// aoti_torch_cpu_mode: the most frequent value of each line along `dim` and a
// position of it. As ATen's CPU kernel: among equally frequent values the
// smallest wins, and the position is the last occurrence of the value (ATen
// takes the end of the value's run after sorting, which for the short lines
// it sorts by insertion is the last occurrence); NaNs never equal each other,
// so each counts once; a reduced dimension of size 0 is refused; complex is
// refused; the results are new contiguous tensors of the reduced shape.
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
void mode_lines(const std::vector<T>& v, const DimSplit& split, std::vector<T>& out_v, std::vector<int64_t>& out_i) {
  std::vector<T> line;
  std::vector<int64_t> perm;
  for (int64_t l = 0; l < split.lines(); ++l) {
    gather_line(v, split, l, line);
    perm.resize(line.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return less_nan_last(line[static_cast<size_t>(a)], line[static_cast<size_t>(b)]);
    });
    T best{};
    int64_t best_i = 0, best_freq = 0, run = 0;
    for (size_t i = 0; i < perm.size(); ++i) {
      ++run;
      const T x = line[static_cast<size_t>(perm[i])];
      if (i + 1 == perm.size() || !(x == line[static_cast<size_t>(perm[i + 1])])) {
        if (run > best_freq) {
          best = x;
          best_i = perm[i];
          best_freq = run;
        }
        run = 0;
      }
    }
    out_v[static_cast<size_t>(l)] = best;
    out_i[static_cast<size_t>(l)] = best_i;
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mode(AtenTensorHandle self_h, int64_t dim, int32_t keepdim,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cpu_mode", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    KILN_RETURN_IF_ERROR(expect_dtype_in(*self, kAllTypes | kReducedFloat | kBool, "self", "mode"));
    if (self->dim() > 0 && self->size(d) == 0)
      return aoti::invalid("argument 'self' has size 0 in dimension " + std::to_string(d) + ", which mode reduces");
    const std::vector<int64_t> out_sizes = reduced_sizes(self->sizes(), d, keepdim != 0);
    return select_along(*self, d, out_sizes, ret0, ret1,
                        [&](auto& v, const DimSplit& split, auto& out, auto& idx) { mode_lines(v, split, out, idx); });
  });
}

}  // extern "C"
