// aoti_torch_cuda_cumsum, aoti_torch_cuda_cumprod: the running sum or product
// along `dim`, with the CPU op's dtype rules (result dtype `dtype`, else the
// input's with integers and bool widened to int64); one block per line
// (kernels/scan_kernel.cu), accumulating in int64 or double. Complex scans run
// host-staged through the CPU op (host_staged.h) until the kernel takes them.
#include <string>

#include "devices/cuda/kernels/scan_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/host_staged.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

extern "C" {
// libkiln's CPU ops (exported as kiln_torch_cpu_*), for complex scans.
AOTITorchError aoti_torch_cpu_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0);
AOTITorchError aoti_torch_cpu_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype, AtenTensorHandle* ret0);
}

bool complex_scan(AtenTensorHandle self_h, const int32_t* dtype_code) {
  const auto is_complex = [](int32_t code) {
    return code == static_cast<int32_t>(DType::Complex64) || code == static_cast<int32_t>(DType::Complex128);
  };
  if (dtype_code != nullptr) return is_complex(*dtype_code);
  int32_t code = 0;
  return self_h != nullptr && aoti_torch_get_dtype(self_h, &code) == 0 && is_complex(code);
}

AOTITorchError cumulative(const char* fn, AtenTensorHandle self_h, int64_t dim, int32_t* dtype_code,
                          AtenTensorHandle* ret0, ScanOp op) {
  if (complex_scan(self_h, dtype_code)) {
    const bool sum = op == ScanOp::Sum;
    return HostStaged(fn, sum ? "aoti_torch_cpu_cumsum" : "aoti_torch_cpu_cumprod", "t..r", "(self, dim, dtype, ret0)",
                      sum ? &aoti_torch_cpu_cumsum : &aoti_torch_cpu_cumprod)(self_h, dim, dtype_code, ret0);
  }
  return aoti::guarded(fn, [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    KILN_ASSIGN_OR_RETURN(std::optional<DType> requested, optional_dtype_arg(dtype_code, "dtype"));
    const DType out_dtype = requested ? *requested : (is_integral_dtype(self.dtype) ? DType::Int64 : self.dtype);
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(self.sizes, out_dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    const LineShape line = line_shape(self, d);
    KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
    KILN_RETURN_IF_ERROR(launch_scan(self.data, self.dtype, in_index, o.data, out_dtype, line, op,
                                     current_stream(self.device_index)));
    return return_handle(out, ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cumsum(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                       AtenTensorHandle* ret0) {
  return cumulative("aoti_torch_cuda_cumsum", self, dim, dtype, ret0, ScanOp::Sum);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_cumprod(AtenTensorHandle self, int64_t dim, int32_t* dtype,
                                                        AtenTensorHandle* ret0) {
  return cumulative("aoti_torch_cuda_cumprod", self, dim, dtype, ret0, ScanOp::Product);
}

}  // extern "C"
