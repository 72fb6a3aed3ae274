// aoti_torch_cpu_nonzero, aoti_torch_cpu_nonzero_static: the coordinates of
// the nonzero elements (mask -> positions, e.g. for gathering selected tokens).
// Both give int64 [n, ndim] in row-major order of the elements. ATen's CPU
// nonzero hands out the transpose of a contiguous [ndim, n] tensor (strides
// (1, n)); nonzero_static's result is contiguous, its rows past the count
// filled with fill_value.
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

/// Flat row-major positions of self's nonzero elements (NaN counts as nonzero).
Result<std::vector<int64_t>> nonzero_positions(const Tensor& self) {
  std::vector<int64_t> pos;
  KILN_RETURN_IF_ERROR(visit_kind(self.dtype(), [&](auto tag) -> Error {
    using T = decltype(tag);
    const std::vector<T> v = read_elements<T>(self);
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != T(0)) pos.push_back(static_cast<int64_t>(i));
    return Error::Ok;
  }));
  return pos;
}

/// Writes the coordinates of `pos` as rows of `out` (int64 [>= rows, ndim], any strides).
void write_coordinates(const std::vector<int64_t>& pos, std::span<const int64_t> sizes, const Tensor& out) {
  int64_t* base = out.data<int64_t>();
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> coord;
  for (size_t r = 0; r < pos.size(); ++r) {
    unravel(pos[r], sizes, coord);
    for (int64_t d = 0; d < ndim; ++d)
      base[static_cast<int64_t>(r) * out.stride(0) + d * out.stride(1)] = coord[static_cast<size_t>(d)];
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_nonzero(AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_nonzero", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pos, nonzero_positions(*self));
    const int64_t n = static_cast<int64_t>(pos.size()), ndim = self->dim();
    const int64_t t_sizes[2] = {ndim, n};
    KILN_ASSIGN_OR_RETURN(Tensor storage, new_cpu_tensor(t_sizes, DType::Int64));
    const int64_t sizes[2] = {n, ndim};
    const int64_t strides[2] = {1, n};
    KILN_ASSIGN_OR_RETURN(Tensor out, storage.make_view(sizes, strides, 0));
    write_coordinates(pos, self->sizes(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_nonzero_static(AtenTensorHandle self_h, int64_t size,
                                                              int64_t fill_value, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_nonzero_static", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    if (size < 0) return aoti::invalid("argument 'size' is " + std::to_string(size) + ", expected >= 0");
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pos, nonzero_positions(*self));
    if (static_cast<int64_t>(pos.size()) > size) pos.resize(static_cast<size_t>(size));
    const int64_t ndim = self->dim();
    const int64_t sizes[2] = {size, ndim};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, DType::Int64));
    std::fill(out.data<int64_t>(), out.data<int64_t>() + size * ndim, fill_value);
    if (ndim > 0) write_coordinates(pos, self->sizes(), out);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
