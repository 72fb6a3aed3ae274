// The shared frame of the ops that pick elements along one dimension and
// return them with their positions (topk, kthvalue, mode): allocate the
// (values, indices) pair, read the input as its real compute type, let the op
// fill both per line, and hand the pair to the caller.
#pragma once

#include <span>
#include <type_traits>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/op_args.h"

namespace kiln::cpu {

/// Calls select(input, split, values, indices) with T the real compute type of
/// `self` (int64_t or double): `input` is self's elements in row-major order,
/// `split` self seen along `dim`, and values/indices (out_sizes' element count,
/// row-major) are what the op writes. Returns values (self's dtype) through
/// ret0 and indices (int64) through ret1. Complex input is refused.
template <typename Select>
Error select_along(const Tensor& self, int64_t dim, std::span<const int64_t> out_sizes, AtenTensorHandle* ret0,
                   AtenTensorHandle* ret1, Select select) {
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
  KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
  KILN_ASSIGN_OR_RETURN(Tensor values, new_cpu_tensor(out_sizes, self.dtype()));
  KILN_ASSIGN_OR_RETURN(Tensor indices, new_cpu_tensor(out_sizes, DType::Int64));
  const DimSplit split = DimSplit::of(self.sizes(), self.dim() == 0 ? -1 : dim);
  const size_t n_out = static_cast<size_t>(values.numel());
  std::vector<int64_t> idx(n_out, 0);
  KILN_RETURN_IF_ERROR(visit_kind(self.dtype(), [&](auto tag) -> Error {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Complex>) {
      return aoti::invalid("complex dtypes are not supported");
    } else {
      std::vector<T> v = read_elements<T>(self);
      std::vector<T> out(n_out);
      select(v, split, out, idx);
      write_elements(out.data(), values);
      return Error::Ok;
    }
  }));
  write_elements(idx.data(), indices);
  KILN_RETURN_IF_ERROR(return_tensor(std::move(values), ret0, "ret0"));
  return return_tensor(std::move(indices), ret1, "ret1");
}

}  // namespace kiln::cpu
