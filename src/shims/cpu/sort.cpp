// aoti_torch_cpu_sort, aoti_torch_cpu_sort_stable: each line along `dim`
// sorted, with the positions the sorted values came from. As ATen's CPU
// kernel: NaN sorts above every number (last ascending, first descending),
// every real dtype and bool is accepted (complex is refused), and both
// results take the input's strides when it is non-overlapping and dense. The
// sort is always stable: equal elements keep their input order, which is
// what stable=True asks and one valid answer where stability is not asked.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

template <typename T>
void sort_lines(std::vector<T>& v, std::vector<int64_t>& idx, const DimSplit& split, bool descending) {
  std::vector<T> line;
  std::vector<int64_t> perm;
  for (int64_t l = 0; l < split.lines(); ++l) {
    gather_line(v, split, l, line);
    perm.resize(line.size());
    std::iota(perm.begin(), perm.end(), int64_t{0});
    if (descending)
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        return greater_nan_first(line[static_cast<size_t>(a)], line[static_cast<size_t>(b)]);
      });
    else
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        return less_nan_last(line[static_cast<size_t>(a)], line[static_cast<size_t>(b)]);
      });
    const int64_t start = split.line_start(l);
    for (int64_t i = 0; i < split.size; ++i) {
      const size_t at = static_cast<size_t>(start + i * split.inner);
      v[at] = line[static_cast<size_t>(perm[static_cast<size_t>(i)])];
      idx[at] = perm[static_cast<size_t>(i)];
    }
  }
}

AOTITorchError sort_impl(const char* fn, AtenTensorHandle self_h, int64_t dim, bool descending,
                         AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self->dim()));
    KILN_RETURN_IF_ERROR(expect_dtype_in(*self, kAllTypes | kReducedFloat | kBool | kWideUnsigned, "self", "sort"));
    KILN_ASSIGN_OR_RETURN(Tensor values, new_cpu_tensor_like(*self, self->dtype()));
    KILN_ASSIGN_OR_RETURN(Tensor indices, new_cpu_tensor_like(*self, DType::Int64));
    const DimSplit split = DimSplit::of(self->sizes(), self->dim() == 0 ? -1 : d);
    std::vector<int64_t> idx(static_cast<size_t>(self->numel()), 0);
    if (is_floating(self->dtype())) {
      std::vector<double> v = read_elements<double>(*self);
      sort_lines(v, idx, split, descending);
      write_elements(v.data(), values);
    } else {
      std::vector<int64_t> v = read_elements<int64_t>(*self);
      // uint64 is read as its int64 bit pattern; flipping the top bit makes
      // int64 order agree with the unsigned order, and flipping back restores it.
      const bool unsigned64 = self->dtype() == DType::UInt64;
      constexpr int64_t top = std::numeric_limits<int64_t>::min();
      if (unsigned64)
        for (int64_t& x : v) x ^= top;
      sort_lines(v, idx, split, descending);
      if (unsigned64)
        for (int64_t& x : v) x ^= top;
      write_elements(v.data(), values);
    }
    write_elements(idx.data(), indices);
    KILN_RETURN_IF_ERROR(return_tensor(std::move(values), ret0, "ret0"));
    return return_tensor(std::move(indices), ret1, "ret1");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                    AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return sort_impl("aoti_torch_cpu_sort", self, dim, descending != 0, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                           int32_t descending, AtenTensorHandle* ret0,
                                                           AtenTensorHandle* ret1) {
  (void)stable;  // a stable sort serves stable=True, False and None alike
  return sort_impl("aoti_torch_cpu_sort_stable", self, dim, descending != 0, ret0, ret1);
}

}  // extern "C"
