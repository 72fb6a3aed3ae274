// aoti_torch_cuda__cdist_forward and aoti_torch_cuda__pdist_forward: p-norm
// distances between rows on the GPU (kernels/dist_kernel.cu), summed in the
// input's dtype as ATen's CUDA kernels do. Checks, shapes and the choice of
// cdist's Euclidean path (matrix-product formula or direct sums, by p,
// compute_mode and the row counts) as shims/common/dist_args.h. Inputs of any
// strides (ATen's _pdist_forward refuses a non-contiguous one; the distances
// would be the same); results are new contiguous tensors.
#include <string>
#include <vector>

#include "devices/cuda/kernels/dist_kernel.h"
#include "shims/common/dist_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__cdist_forward(AtenTensorHandle x1, AtenTensorHandle x2, double p,
                                                               int64_t* compute_mode, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__cdist_forward", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(x1, "x1"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(x2, "x2"));
    KILN_ASSIGN_OR_RETURN(aoti::CdistPlan plan, aoti::cdist_plan(a.sizes, a.dtype, b.sizes, b.dtype, p, compute_mode));
    KILN_RETURN_IF_ERROR(same_dtype_and_device(b, a, "x2", "x1"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(plan.out_sizes, a.dtype, a.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    CdistArgs args;
    args.x1 = a.data;
    args.x2 = b.data;
    args.dtype = a.dtype;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> st1, broadcast_strides(a, plan.x1_sizes, "x1"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> st2, broadcast_strides(b, plan.x2_sizes, "x2"));
    KILN_ASSIGN_OR_RETURN(args.x1_index, indexer(plan.x1_sizes, st1));
    KILN_ASSIGN_OR_RETURN(args.x2_index, indexer(plan.x2_sizes, st2));
    args.batches = plan.batches;
    args.rows1 = plan.rows1;
    args.rows2 = plan.rows2;
    args.cols = plan.cols;
    args.p = p;
    args.by_product = plan.by_product;
    args.out = o.data;
    KILN_RETURN_IF_ERROR(launch_cdist(args, current_stream(a.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda__pdist_forward(AtenTensorHandle self, double p,
                                                               AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda__pdist_forward", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(const int64_t pairs, aoti::pdist_pairs(a.sizes, a.dtype, p));
    const int64_t sizes[1] = {pairs};
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(sizes, a.dtype, a.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    PdistArgs args;
    args.x = a.data;
    args.dtype = a.dtype;
    KILN_ASSIGN_OR_RETURN(args.x_index, indexer(a));
    args.n = a.sizes[0];
    args.cols = a.sizes[1];
    args.p = p;
    args.out = o.data;
    KILN_RETURN_IF_ERROR(launch_pdist(args, current_stream(a.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
