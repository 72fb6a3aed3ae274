// aoti_torch_cuda__fused_rms_norm: x * rsqrt(mean(x^2) + eps) (* weight) over
// the trailing normalized_shape dims, and that rstd, on the GPU
// (kernels/rms_norm_kernel.cu). Checks, eps default and rstd's dtype and shape
// as shims/common/rms_norm_args.h (ATen's CUDA kernel gives rstd the same
// geometry as its CPU one); the output is a new contiguous tensor of the
// input's dtype, as ATen's CUDA kernel allocates it. Input and weight of any
// strides; weight may have another floating dtype.
#include <string>
#include <vector>

#include "devices/cuda/kernels/rms_norm_kernel.h"
#include "shims/common/rms_norm_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

bool is_contiguous(const TensorRef& t) {
  int64_t expected = 1;
  for (size_t d = t.sizes.size(); d-- > 0;) {
    if (t.sizes[d] == 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__fused_rms_norm(AtenTensorHandle input,
                                                                const int64_t* normalized_shape,
                                                                int64_t normalized_shape_len_,
                                                                AtenTensorHandle* weight, double* eps,
                                                                AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda__fused_rms_norm", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef x, read_tensor(input, "input"));
    TensorRef w;
    const bool has_weight = weight != nullptr && *weight != nullptr;
    if (has_weight) {
      KILN_ASSIGN_OR_RETURN(w, read_tensor(*weight, "weight"));
      if (w.device_index != x.device_index)
        return aoti::invalid("argument 'weight' is on CUDA device " + std::to_string(w.device_index) +
                             " but input on " + std::to_string(x.device_index));
    }
    KILN_ASSIGN_OR_RETURN(std::span<const int64_t> shape,
                          aoti::int_array_arg(normalized_shape, normalized_shape_len_, "normalized_shape"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(aoti::RmsNormPlan plan,
                          aoti::rms_norm_plan(x.sizes, x.dtype, shape, has_weight ? &w.sizes : nullptr,
                                              has_weight ? &w.dtype : nullptr, eps));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(x.sizes, x.dtype, x.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle rstd, new_contiguous(plan.rstd_sizes, plan.acc, x.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(rstd.get(), "ret1"));
    RmsNormArgs a;
    a.x = x.data;
    a.x_contiguous = is_contiguous(x);
    if (!a.x_contiguous) {
      KILN_ASSIGN_OR_RETURN(a.x_index, indexer(x));
    }
    if (has_weight) {
      a.weight = w.data;
      a.weight_dtype = w.dtype;
      KILN_ASSIGN_OR_RETURN(a.weight_index, indexer(w));
    }
    a.y = o.data;
    a.rstd = r.data;
    a.dtype = x.dtype;
    a.rows = plan.rows;
    a.inner = plan.inner;
    a.eps = plan.eps;
    KILN_RETURN_IF_ERROR(launch_rms_norm(a, current_stream(x.device_index)));
    KILN_RETURN_IF_ERROR(return_handle(out, ret0, "ret0"));
    return return_handle(rstd, ret1, "ret1");
  });
}

}  // extern "C"
