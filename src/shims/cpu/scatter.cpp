// aoti_torch_cpu_scatter_src_out, aoti_torch_cpu_scatter_value_out,
// aoti_torch_cpu_scatter_reduce_two_out: out = self with, for every element of
// `index` at coordinates c, out[c with c[dim] = index[c]] set to (or reduced
// with) src[c] or `value`. As ATen: index is int64 (or int32) with self's
// number of dimensions, no larger than self apart from `dim` and no larger than
// src; index values are not wrapped and must lie in [0, self.size(dim)); src
// has self's dtype; an empty index leaves out = self. `out` (model-allocated,
// any strides) must have self's shape and dtype. Where an index repeats,
// plain scatter keeps the last write (ATen leaves it unspecified).
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/scatter_reduce.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

/// The (target in self, position in src) pairs of a scatter along `dim`
/// (shapes already checked by aoti::scatter_args), with every index value
/// checked. `src` may be null (scalar value).
Result<std::vector<ReducePair>> scatter_pairs(const Tensor& self, int64_t dim, const Tensor& index,
                                              const Tensor* src) {
  std::vector<ReducePair> pairs;
  const std::vector<int64_t> ss = nonempty_sizes(self), is = nonempty_sizes(index);
  const std::vector<int64_t> sr = src ? nonempty_sizes(*src) : is;
  const std::vector<int64_t> idx = read_elements<int64_t>(index);
  const std::vector<int64_t> self_strides = contiguous_strides(ss), src_strides = contiguous_strides(sr);
  pairs.reserve(idx.size());
  std::vector<int64_t> c;
  for (size_t k = 0; k < idx.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(int64_t v, checked_index(idx[k], ss[static_cast<size_t>(dim)], dim, "index", false));
    unravel(static_cast<int64_t>(k), is, c);
    int64_t t = 0, s = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      t += (static_cast<int64_t>(d) == dim ? v : c[d]) * self_strides[d];
      s += c[d] * src_strides[d];
    }
    pairs.push_back(ReducePair{t, s});
  }
  return pairs;
}

AOTITorchError scatter_impl(const char* fn, AtenTensorHandle out_h, AtenTensorHandle self_h, int64_t dim,
                            AtenTensorHandle index_h, AtenTensorHandle src_h, const double* value,
                            const char* reduce, bool include_self) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * out, cpu_tensor_arg(out_h, "out"));
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * index, cpu_tensor_arg(index_h, "index"));
    Tensor* src = nullptr;
    if (value == nullptr) {
      KILN_ASSIGN_OR_RETURN(src, cpu_tensor_arg(src_h, "src"));
    }
    const aoti::ScatterOperand src_arg{src ? src->dtype() : self->dtype(), src ? src->sizes() : index->sizes()};
    KILN_ASSIGN_OR_RETURN(aoti::ScatterArgs a,
                          aoti::scatter_args({out->dtype(), out->sizes()}, {self->dtype(), self->sizes()}, dim,
                                             {index->dtype(), index->sizes()}, src ? &src_arg : nullptr, reduce));
    if (value != nullptr) KILN_RETURN_IF_ERROR(aoti::scatter_value_check(*value, self->dtype()));
    const int64_t d = a.dim;
    const Reduction r = a.reduce;
    std::vector<ReducePair> pairs;
    if (!a.empty_index) {
      KILN_ASSIGN_OR_RETURN(pairs, scatter_pairs(*self, d, *index, src));
    }
    return visit_kind(self->dtype(), [&](auto tag) -> Error {
      using T = decltype(tag);
      std::vector<T> result = read_elements<T>(*self);
      std::vector<T> source;
      if (src) {
        source = read_elements<T>(*src);
      } else {
        // A Scalar becomes self's dtype: bool is "!= 0", integers truncate.
        T v{};
        if constexpr (std::is_same_v<T, int64_t>)
          v = self->dtype() == DType::Bool ? T(*value != 0) : static_cast<int64_t>(*value);
        else
          v = T(*value);
        source.assign(1, v);
        for (ReducePair& p : pairs) p.source = 0;
      }
      apply_reduction(result, source, pairs, r, include_self);
      write_elements(result.data(), *out);
      return Error::Ok;
    });
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self,
                                                               int64_t dim, AtenTensorHandle index,
                                                               AtenTensorHandle src) {
  return scatter_impl("aoti_torch_cpu_scatter_src_out", out, self, dim, index, src, nullptr, nullptr, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                 int64_t dim, AtenTensorHandle index, double value) {
  return scatter_impl("aoti_torch_cpu_scatter_value_out", out, self, dim, index, nullptr, &value, nullptr, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self,
                                                                      int64_t dim, AtenTensorHandle index,
                                                                      AtenTensorHandle src, const char* reduce,
                                                                      int32_t include_self) {
  if (reduce == nullptr) reduce = "";
  return scatter_impl("aoti_torch_cpu_scatter_reduce_two_out", out, self, dim, index, src, nullptr, reduce,
                      include_self != 0);
}

}  // extern "C"
