// aoti_torch_cuda_index_reduce: a new contiguous tensor = self with, for
// each i, the slice index[i] along `dim` folded (prod, mean, amax or amin)
// with source's slice i. It is the scatter of source along `dim` with the
// index vector standing for every element of its slice, so it runs the
// scatter kernels (kernels/scatter_kernel.cu; see scatter.cpp). The
// arguments are checked as on the CPU (shims/common/scatter_args.h); the
// dtypes are ATen CUDA's: integers and floating, not bool or complex. Every
// index value is checked first: outside a CUDA graph capture an out-of-range
// one is an error naming it (one synchronisation); under capture nothing is
// read back and such slices are skipped.
#include <vector>

#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/scatter_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_index_reduce(AtenTensorHandle self_h, int64_t dim,
                                                             AtenTensorHandle index_h, AtenTensorHandle source_h,
                                                             const char* reduce, int32_t include_self,
                                                             AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_index_reduce", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef index, read_tensor(index_h, "index"));
    KILN_ASSIGN_OR_RETURN(TensorRef source, read_tensor(source_h, "source"));
    KILN_ASSIGN_OR_RETURN(aoti::IndexReduceArgs a,
                          aoti::index_reduce_args({self.dtype, self.sizes}, dim, {index.dtype, index.sizes},
                                                  {source.dtype, source.sizes}, reduce));
    KILN_RETURN_IF_ERROR(cuda_reduction_dtype_check(a.reduce, self.dtype, "index_reduce"));
    KILN_RETURN_IF_ERROR(same_device(index, self, "index"));
    KILN_RETURN_IF_ERROR(same_device(source, self, "source"));
    const cudaStream_t stream = current_stream(self.device_index);
    const size_t d = static_cast<size_t>(a.dim);
    const std::vector<int64_t> ss = aoti::nonempty_sizes(self.sizes), sr = aoti::nonempty_sizes(source.sizes);
    const int64_t index_stride = index.dim() == 0 ? 1 : index.strides[0];

    // The index vector on its own, for the range check.
    ScatterPlan check;
    const int64_t count[1] = {a.count};
    KILN_RETURN_IF_ERROR(plan_dims(check, count));
    check.index_strides[0] = index_stride;
    check.dim_size = ss[d];
    check.index = index.data;
    check.index_dtype = index.dtype;
    KILN_RETURN_IF_ERROR(check_scatter_indices(check, a.dim, self.device_index, stream));

    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(self.sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef out, read_tensor(result.get(), "ret0"));
    KILN_RETURN_IF_ERROR(copy_self_to_out(out, self, stream));

    // Source element c targets out at c with c[dim] = index[c[dim]].
    ScatterPlan p;
    KILN_RETURN_IF_ERROR(plan_dims(p, sr));
    p.dim = static_cast<int>(a.dim);
    p.dim_size = ss[d];
    const std::vector<int64_t> ost = nonempty_strides(out), sst = nonempty_strides(source);
    const std::vector<int64_t> cst = contiguous_strides(ss);
    for (size_t j = 0; j < sr.size(); ++j) {
      p.index_strides[j] = j == d ? index_stride : 0;
      p.out_strides[j] = ost[j];
      p.src_strides[j] = sst[j];
      p.count_strides[j] = cst[j];
    }
    p.index = index.data;
    p.index_dtype = index.dtype;
    p.out = out.data;
    p.dtype = out.dtype;
    p.src = source.data;
    KILN_RETURN_IF_ERROR(run_scatter_reduction(p, a.reduce, include_self != 0, out, self.device_index, stream));
    return return_handle(result, ret0, "ret0");
  });
}

}  // extern "C"
