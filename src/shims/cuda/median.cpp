// aoti_torch_cuda_median, aoti_torch_cuda_nanmedian: the median of all
// elements as a 0-d tensor of the input's dtype, as ATen's CUDA kernel
// computes it: the whole tensor sorted as one line (kernels/sort_kernel.h,
// NaN last), then the lower middle element (kernels/select_kernel.h).
// median is NaN when any element is NaN; nanmedian takes the middle of the
// elements before the first NaN, NaN when there are none. An empty input
// gives NaN, for integer dtypes the host conversion of NaN ATen performs
// (shims/common/select_args.h). bool, complex and the wide unsigned dtypes
// are refused, as on the CPU.
#include <cstdint>
#include <string>
#include <vector>

#include "devices/cuda/kernels/select_kernel.h"
#include "devices/cuda/kernels/sort_kernel.h"
#include "shims/common/select_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/sorted_lines.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

bool median_supports(DType d) {
  switch (d) {
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64:
      return true;
    default: return false;
  }
}

AOTITorchError median_impl(const char* fn, const char* op, AtenTensorHandle self_h, AtenTensorHandle* ret0,
                           bool ignore_nan) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    if (!median_supports(self.dtype))
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self.dtype) + ", which " + op +
                           " does not support on CUDA");
    KILN_ASSIGN_OR_RETURN(OwnedHandle result, new_contiguous(std::vector<int64_t>{}, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef out, read_tensor(result.get(), "ret0"));
    cudaStream_t stream = current_stream(self.device_index);
    const int64_t n = self.numel();
    SortedRows sorted;
    if (n > 0) {
      LineShape whole;  // the tensor as one line
      whole.size = n;
      KILN_ASSIGN_OR_RETURN(sorted, sort_lines_to_rows(self, whole, n));
    }
    KILN_RETURN_IF_ERROR(launch_median_sorted(sorted.values.get(), self.dtype, n, ignore_nan,
                                              aoti::empty_median_integer(self.dtype), out.data, stream));
    return return_handle(result, ret0, "ret0");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_median(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return median_impl("aoti_torch_cuda_median", "median", self, ret0, false);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_nanmedian(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return median_impl("aoti_torch_cuda_nanmedian", "nanmedian", self, ret0, true);
}

}  // extern "C"
