// aoti_torch_cpu_cat: tensors joined along `dim`, with the checks, dtype and
// result layout of shims/common/cat_args.h.
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/common/cat_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/index_util.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_cat(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim,
                                                   AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_cat", [&]() -> Error {
    if (tensors_len_ > 0 && tensors == nullptr) return aoti::invalid("argument 'tensors' is null");
    std::vector<Tensor*> in;
    std::vector<aoti::CatOperand> ops;
    for (int64_t i = 0; i < tensors_len_; ++i) {
      KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(tensors[i], "tensors"));
      in.push_back(t);
    }
    for (Tensor* t : in) ops.push_back(aoti::CatOperand{t->sizes(), t->strides(), t->dtype()});
    KILN_ASSIGN_OR_RETURN(aoti::CatPlan plan, aoti::cat_plan(ops, dim));
    const DType dtype = plan.dtype;
    const std::vector<int64_t>& sizes = plan.sizes;
    const std::vector<int64_t>& strides = plan.strides;
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(sizes, strides, dtype, Device{DeviceType::CPU, 0}));
    const auto d = static_cast<size_t>(plan.dim);
    for (size_t i = 0; i < in.size(); ++i) {
      Tensor* t = in[i];
      if (aoti::cat_skips(t->sizes()) || t->numel() == 0) continue;
      KILN_ASSIGN_OR_RETURN(Tensor part, out.make_view(t->sizes(), strides, out.storage_offset() + plan.at[i] * strides[d]));
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
