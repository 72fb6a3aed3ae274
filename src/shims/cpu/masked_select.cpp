// aoti_torch_cpu_masked_select, aoti_torch_cpu_masked_scatter: reading or
// writing the elements where a bool mask is true. As ATen: self and mask
// broadcast together; masked_select gives a 1-d tensor of the selected
// elements in row-major order; masked_scatter gives a new contiguous tensor of
// the broadcast shape whose masked elements are source's first elements in
// order (source has self's dtype, any shape, and at least as many elements as
// the mask has true values). Elements move as raw bytes, so every dtype works.
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

Result<std::vector<int64_t>> broadcast_pair(const Tensor& self, const Tensor& mask) {
  auto shape = broadcast_shapes(self.sizes(), mask.sizes());
  if (!shape)
    return aoti::invalid("argument 'mask' of shape " + aoti::shape_string(mask.sizes()) +
                         " does not broadcast with 'self' of shape " + aoti::shape_string(self.sizes()));
  return *shape;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_masked_select(AtenTensorHandle self_h, AtenTensorHandle mask_h,
                                                             AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_masked_select", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * mask, cpu_tensor_arg(mask_h, "mask"));
    KILN_RETURN_IF_ERROR(bool_mask_check(*mask, "mask"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, broadcast_pair(*self, *mask));
    const Tensor s = expand_view(*self, shape);
    const std::vector<int64_t> m = read_elements<int64_t>(expand_view(*mask, shape));
    int64_t n = 0;
    for (int64_t v : m) n += v != 0;
    const int64_t out_sizes[1] = {n};
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(out_sizes, self->dtype()));
    const size_t es = element_size(self->dtype());
    const char* src = static_cast<const char*>(s.data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    int64_t w = 0;
    for_each_offset(shape, s.strides(), [&](int64_t k, int64_t off) {
      if (m[static_cast<size_t>(k)] != 0) std::memcpy(dst + es * static_cast<size_t>(w++), src + off * static_cast<int64_t>(es), es);
    });
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_masked_scatter(AtenTensorHandle self_h, AtenTensorHandle mask_h,
                                                              AtenTensorHandle source_h, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_masked_scatter", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * self, cpu_tensor_arg(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * mask, cpu_tensor_arg(mask_h, "mask"));
    KILN_ASSIGN_OR_RETURN(Tensor * source, cpu_tensor_arg(source_h, "source"));
    KILN_RETURN_IF_ERROR(bool_mask_check(*mask, "mask"));
    KILN_RETURN_IF_ERROR(same_dtype(*source, self->dtype(), "source"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, broadcast_pair(*self, *mask));
    const std::vector<int64_t> m = read_elements<int64_t>(expand_view(*mask, shape));
    int64_t n = 0;
    for (int64_t v : m) n += v != 0;
    if (n > source->numel())
      return aoti::invalid("argument 'source' has " + std::to_string(source->numel()) +
                           " elements, fewer than the mask's " + std::to_string(n) + " true values");
    KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(shape, self->dtype()));
    if (out.numel() == 0) return return_tensor(std::move(out), ret0, "ret0");
    KILN_RETURN_IF_ERROR(copy_tensor(out, expand_view(*self, shape)));
    const size_t es = element_size(self->dtype());
    // Source's elements in row-major order, as offsets into its storage.
    std::vector<int64_t> src_off;
    src_off.reserve(static_cast<size_t>(n));
    for_each_offset(source->sizes(), source->strides(), [&](int64_t k, int64_t off) {
      if (k < n) src_off.push_back(off);
    });
    const char* src = static_cast<const char*>(source->data_ptr());
    char* dst = static_cast<char*>(out.data_ptr());
    size_t r = 0;
    for (size_t k = 0; k < m.size(); ++k)
      if (m[k] != 0) std::memcpy(dst + es * k, src + src_off[r++] * static_cast<int64_t>(es), es);
    return return_tensor(std::move(out), ret0, "ret0");
  });
}

}  // extern "C"
