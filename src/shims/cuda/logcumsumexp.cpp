// aoti_torch_cuda_logcumsumexp: log(cumsum(exp(x))) along `dim`, as a running
// log-add-exp that never overflows, one block per line accumulating in double
// (kernels/scan_kernel.cu). As ATen: floating dtypes (and complex, which runs
// host-staged through the CPU op, host_staged.h, until the kernel takes it);
// -inf terms add nothing, +inf wins, NaN spreads; the result is a new
// contiguous tensor of self's dtype owned by the caller.
#include <string>

#include "devices/cuda/kernels/scan_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/host_staged.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {
// libkiln's CPU op (exported as kiln_torch_cpu_logcumsumexp), for complex input.
AOTITorchError aoti_torch_cpu_logcumsumexp(AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0);

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_logcumsumexp(AtenTensorHandle self_h, int64_t dim,
                                                             AtenTensorHandle* ret0) {
  int32_t code = 0;
  if (self_h != nullptr && aoti_torch_get_dtype(self_h, &code) == 0 &&
      (code == static_cast<int32_t>(DType::Complex64) || code == static_cast<int32_t>(DType::Complex128)))
    return HostStaged("aoti_torch_cuda_logcumsumexp", "aoti_torch_cpu_logcumsumexp", "t.r", "(self, dim, ret0)",
                      &aoti_torch_cpu_logcumsumexp)(self_h, dim, ret0);
  return aoti::guarded("aoti_torch_cuda_logcumsumexp", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    if (!is_floating_dtype(self.dtype))
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self.dtype) +
                           ", which logcumsumexp does not support (floating and complex dtypes only)");
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(self.sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    const LineShape line = line_shape(self, d);
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
    KILN_RETURN_IF_ERROR(launch_scan(self.data, self.dtype, in_index, o.data, self.dtype, line,
                                     ScanOp::LogSumExp, current_stream(self.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
