// aoti_torch_cuda_kthvalue: the k-th smallest element (1-based) of each line
// along `dim` and its position. Each line is sorted stably (kernels/
// sort_kernel.h: NaN after +inf, as ATen orders it) keeping its first k
// elements, and element k - 1 of each is picked (kernels/select_kernel.h).
// Results are new contiguous tensors of the reduced shape (keepdim keeps
// `dim` with size 1), as ATen's CUDA kernel allocates them. Dtypes as ATen's
// CUDA kernel dispatches: the integer and floating ones, not bool, complex or
// the wide unsigned ones. Among equal values the position is the first one
// in the line; ATen's radix selection is free to return any of them.
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

bool kthvalue_supports(DType d) {
  switch (d) {
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64:
      return true;
    default: return false;
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_kthvalue(AtenTensorHandle self_h, int64_t k, int64_t dim,
                                                         int32_t keepdim, AtenTensorHandle* ret0,
                                                         AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda_kthvalue", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    if (!kthvalue_supports(self.dtype))
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self.dtype) +
                           ", which kthvalue does not support on CUDA");
    const int64_t size = self.dim() == 0 ? 1 : self.sizes[static_cast<size_t>(d)];
    KILN_RETURN_IF_ERROR(aoti::kthvalue_line_args(size, k, d));
    const LineShape shape = line_shape(self, d);
    const std::vector<int64_t> out_sizes = aoti::reduced_sizes(self.sizes, d, keepdim != 0);
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_contiguous(out_sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_contiguous(out_sizes, DType::Int64, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef i, read_tensor(indices.get(), "ret1"));
    const int64_t lines = shape.lines();
    if (lines > 0) {
      KILN_ASSIGN_OR_RETURN(SortedRows sorted, sort_lines_to_rows(self, shape, k));
      KILN_RETURN_IF_ERROR(launch_pick_sorted(sorted.values.get(), static_cast<int64_t*>(sorted.positions.get()),
                                              self.dtype, lines, k, k - 1, v.data, static_cast<int64_t*>(i.data),
                                              current_stream(self.device_index)));
    }
    KILN_RETURN_IF_ERROR(return_handle(values, ret0, "ret0"));
    return return_handle(indices, ret1, "ret1");
  });
}

}  // extern "C"
