// aoti_torch_cpu_index_reduce: a new contiguous tensor = self with, for each
// i, the slice index[i] along `dim` reduced (prod, mean, amax or amin) with
// source's slice i. As ATen: index is a vector (or scalar) of int64/int32
// whose values are not wrapped and must lie in [0, self.size(dim)); source has
// self's dtype and shape except source.size(dim) == index.numel().
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/scatter_reduce.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_index_reduce(AtenTensorHandle self_h, int64_t dim,
                                                            AtenTensorHandle index_h, AtenTensorHandle source_h,
                                                            const char* reduce, int32_t include_self,
                                                            AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_index_reduce", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * index, cpu_tensor_arg(index_h, "index"));
    KILN_ASSIGN_OR_RETURN(Tensor * source, cpu_tensor_arg(source_h, "source"));
    KILN_ASSIGN_OR_RETURN(aoti::IndexReduceArgs a,
                          aoti::index_reduce_args({self->dtype(), self->sizes()}, dim,
                                                  {index->dtype(), index->sizes()},
                                                  {source->dtype(), source->sizes()}, reduce));
    const int64_t d = a.dim, n = a.count;
    const Reduction r = a.reduce;
    const std::vector<int64_t> ss = nonempty_sizes(*self), sr = nonempty_sizes(*source);
    std::vector<int64_t> idx = read_elements<int64_t>(*index);
    for (int64_t& v : idx) {
      KILN_ASSIGN_OR_RETURN(v, checked_index(v, ss[static_cast<size_t>(d)], d, "index", false));
    }
    const DimSplit ts = DimSplit::of(ss, d), srs = DimSplit::of(sr, d);
    std::vector<ReducePair> pairs;
    pairs.reserve(static_cast<size_t>(srs.outer * n * srs.inner));
    for (int64_t o = 0; o < srs.outer; ++o)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < srs.inner; ++j)
          pairs.push_back(ReducePair{(o * ts.size + idx[static_cast<size_t>(i)]) * ts.inner + j,
                                     (o * srs.size + i) * srs.inner + j});
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(self->sizes(), self->dtype()));
    KILN_RETURN_IF_ERROR(visit_kind(self->dtype(), [&](auto tag) -> Error {
      using T = decltype(tag);
      std::vector<T> result = read_elements<T>(*self);
      apply_reduction(result, read_elements<T>(*source), pairs, r, include_self != 0);
      write_elements(result.data(), out);
      return Error::Ok;
    }));
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
