// aoti_torch_cuda_cat: tensors joined along `dim`, with the checks, dtype and
// result layout of shims/common/cat_args.h (ATen's meta function, the same
// for CPU and CUDA). All inputs on one CUDA device; any strides; each input
// converted to the promoted dtype as it is copied. One launch copies up to
// kCatBatch inputs (kernels/cat_kernel.cu); longer lists take one launch per
// batch.
#include <string>
#include <vector>

#include "devices/cuda/kernels/cat_kernel.h"
#include "shims/common/cat_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// The dtypes the kernel converts between; any dtype copies to itself.
bool convertible(DType d) { return is_integral_dtype(d) || is_floating_dtype(d) || d == DType::Complex64 ||
                                   d == DType::Complex128; }

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cat(const AtenTensorHandle* tensors, int64_t tensors_len_,
                                                    int64_t dim, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_cat", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    if (tensors_len_ > 0 && tensors == nullptr) return aoti::invalid("argument 'tensors' is null");
    std::vector<TensorRef> in;
    in.reserve(static_cast<size_t>(tensors_len_ > 0 ? tensors_len_ : 0));
    for (int64_t i = 0; i < tensors_len_; ++i) {
      KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(tensors[i], "tensors"));
      if (!in.empty() && t.device_index != in[0].device_index)
        return aoti::invalid("argument 'tensors': expected all tensors to be on the same device, but tensor " +
                             std::to_string(i) + " is on cuda:" + std::to_string(t.device_index) +
                             " and tensor 0 on cuda:" + std::to_string(in[0].device_index));
      in.push_back(std::move(t));
    }
    std::vector<aoti::CatOperand> ops;
    ops.reserve(in.size());
    for (const TensorRef& t : in) ops.push_back(aoti::CatOperand{t.sizes, t.strides, t.dtype});
    KILN_ASSIGN_OR_RETURN(aoti::CatPlan plan, aoti::cat_plan(ops, dim));
    const int device = in.empty() ? 0 : in[0].device_index;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].dtype != plan.dtype && !(convertible(in[i].dtype) && convertible(plan.dtype)))
        return set_error(Error::NotSupported, "argument 'tensors': tensor " + std::to_string(i) + " of dtype " +
                                                  dtype_name(in[i].dtype) + " cannot be concatenated into " +
                                                  dtype_name(plan.dtype) + " on CUDA");
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_tensor(plan.sizes, plan.strides, plan.dtype,
                                                      static_cast<int32_t>(DeviceType::CUDA), device));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    if (o.numel() > 0) {
      CatBatch batch;
      batch.out = o.data;
      batch.out_dtype = o.dtype;
      batch.out_bytes = static_cast<int>(o.element_bytes());
      batch.dim = static_cast<int>(plan.dim);
      KILN_ASSIGN_OR_RETURN(batch.result, indexer(o));
      const cudaStream_t stream = current_stream(device);
      for (size_t i = 0; i < in.size(); ++i) {
        const TensorRef& t = in[i];
        if (aoti::cat_skips(t.sizes) || t.numel() == 0) continue;
        CatPiece& p = batch.pieces[batch.count++];
        p.data = t.data;
        p.dtype = t.dtype;
        p.size = t.sizes[static_cast<size_t>(plan.dim)];
        p.at = plan.at[i];
        p.numel = t.numel();
        for (size_t d = 0; d < t.strides.size(); ++d) p.strides[d] = t.strides[d];
        if (p.numel > batch.max_numel) batch.max_numel = p.numel;
        if (batch.count == kCatBatch) {
          KILN_RETURN_IF_ERROR(launch_cat(batch, stream));
          batch.count = 0;
          batch.max_numel = 0;
        }
      }
      KILN_RETURN_IF_ERROR(launch_cat(batch, stream));
    }
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
