// aoti_torch_cpu_cat: tensors joined along `dim`. As ATen: the result dtype
// promotes over all inputs; a legacy empty 1-d tensor of shape [0] is skipped
// (beside tensors of other ranks, and for wrapping dim); every other input has
// the same rank (not 0) and the same sizes outside `dim`. The result is
// channels-last (2-d or 3-d) when every input's layout suggests it, else
// contiguous.
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

bool legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// ATen's is_channels_last_strides_2d/3d heuristic: walking the dims in
// channels-last order (C, then spatial from the last, then N), strides never
// decrease and N's stride is not C's.
bool strides_like_channels_last(const Tensor& t) {
  static const int64_t order4[] = {1, 3, 2, 0};
  static const int64_t order5[] = {1, 4, 3, 2, 0};
  std::span<const int64_t> order;
  if (t.dim() == 4) order = order4;
  else if (t.dim() == 5) order = order5;
  else return false;
  int64_t min = 0;
  for (int64_t d : order) {
    if (t.size(d) == 0) return false;
    if (t.stride(d) < min) return false;
    if (d == 0 && min == t.stride(1)) return false;
    min = t.stride(d);
    if (t.size(d) > 1) min *= t.size(d);
  }
  return true;
}

std::vector<int64_t> channels_last_strides(std::span<const int64_t> sizes) {
  const size_t n = sizes.size();
  std::vector<int64_t> st(n);
  int64_t acc = 1;
  st[1] = acc;
  acc *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = n - 1; d >= 2; --d) {
    st[d] = acc;
    acc *= std::max<int64_t>(sizes[d], 1);
  }
  st[0] = acc;
  return st;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim,
                                                   AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_cat", [&]() -> Error {
    if (tensors_len_ <= 0) return aoti::invalid("argument 'tensors' is an empty list, expected at least one tensor");
    if (tensors == nullptr) return aoti::invalid("argument 'tensors' is null");
    std::vector<Tensor*> in;
    for (int64_t i = 0; i < tensors_len_; ++i) {
      KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(tensors[i], "tensors"));
      if (t->dim() == 0)
        return aoti::invalid("argument 'tensors': zero-dimensional tensor (at position " + std::to_string(i) +
                             ") cannot be concatenated");
      in.push_back(t);
    }
    DType dtype = in[0]->dtype();
    for (Tensor* t : in) dtype = promote_types(dtype, t->dtype());
    const Tensor* ref = nullptr;
    for (Tensor* t : in)
      if (!legacy_empty(*t)) {
        ref = t;
        break;
      }
    if (ref == nullptr) {
      const int64_t sizes[1] = {0};
      // ATen checks no dim here: only legacy empty tensors were given.
      KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(sizes, dtype));
      return return_tensor(std::move(out), ret0, "ret0");
    }
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, ref->dim()));
    std::vector<int64_t> sizes = ref->sizes();
    sizes[static_cast<size_t>(d)] = 0;
    bool channels_last = true;
    for (size_t i = 0; i < in.size(); ++i) {
      const Tensor& t = *in[i];
      channels_last = channels_last && strides_like_channels_last(t);
      if (legacy_empty(t)) continue;
      if (t.dim() != ref->dim())
        return aoti::invalid("argument 'tensors': tensors must have the same number of dimensions: got " +
                             std::to_string(ref->dim()) + " and " + std::to_string(t.dim()) + " (tensor number " +
                             std::to_string(i) + ")");
      for (int64_t j = 0; j < t.dim(); ++j)
        if (j != d && t.size(j) != ref->size(j))
          return aoti::invalid("argument 'tensors': sizes of tensors must match except in dimension " +
                               std::to_string(d) + ". Expected size " + std::to_string(ref->size(j)) +
                               " but got size " + std::to_string(t.size(j)) + " for tensor number " +
                               std::to_string(i) + " in the list");
      sizes[static_cast<size_t>(d)] += t.size(d);
    }
    const std::vector<int64_t> strides =
        channels_last ? channels_last_strides(sizes) : contiguous_strides(sizes);
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(sizes, strides, dtype, Device{DeviceType::CPU, 0}));
    int64_t at = 0;
    for (Tensor* t : in) {
      if (legacy_empty(*t) || t->numel() == 0) {
        if (!legacy_empty(*t)) at += t->size(d);
        continue;
      }
      KILN_ASSIGN_OR_RETURN(Tensor part, out.make_view(t->sizes(), strides, out.storage_offset() + at * strides[static_cast<size_t>(d)]));
      at += t->size(d);
      if (t->dtype() == dtype) {
        KILN_RETURN_IF_ERROR(copy_tensor(part, *t));
        continue;
      }
      KILN_RETURN_IF_ERROR(visit_kind(dtype, [&](auto tag) -> Error {
        using T = decltype(tag);
        write_elements(read_elements<T>(*t).data(), part);
        return Error::Ok;
      }));
    }
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
