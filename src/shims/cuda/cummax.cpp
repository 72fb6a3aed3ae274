// aoti_torch_cuda_cummax, aoti_torch_cuda_cummin: the running maximum
// (minimum) along `dim` and the position it was last reached at, one block per
// line (kernels/scan_kernel.cu). As ATen: ties give the last position, a NaN
// takes over and stays (each later NaN takes the position); bool, integer and
// floating dtypes; both results are new contiguous tensors owned by the
// caller, the values in self's dtype and the indices int64.
#include <string>

#include "devices/cuda/kernels/scan_kernel.h"
#include "shims/common/cum_extreme_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

AOTITorchError cum_extreme(const char* fn, AtenTensorHandle self_h, int64_t dim, AtenTensorHandle* ret0,
                           AtenTensorHandle* ret1, bool max) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    const DType dt = self.dtype;
    KILN_RETURN_IF_ERROR(aoti::cum_extreme_dtype_check(dt, max, "CUDA"));
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_contiguous(self.sizes, dt, self.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_contiguous(self.sizes, DType::Int64, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef ix, read_tensor(indices.get(), "ret1"));
    const LineShape line = line_shape(self, d);
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
    KILN_RETURN_IF_ERROR(launch_cum_extreme(self.data, dt, in_index, v.data, static_cast<int64_t*>(ix.data), line,
                                            max, current_stream(self.device_index)));
    KILN_RETURN_IF_ERROR(return_handle(values, ret0, "ret0"));
    return return_handle(indices, ret1, "ret1");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cummax(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
                                                       AtenTensorHandle* ret1) {
  return cum_extreme("aoti_torch_cuda_cummax", self, dim, ret0, ret1, true);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cummin(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
                                                       AtenTensorHandle* ret1) {
  return cum_extreme("aoti_torch_cuda_cummin", self, dim, ret0, ret1, false);
}

}  // extern "C"
