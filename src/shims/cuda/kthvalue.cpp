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
    LineShape shape;
    std::vector<int64_t> out_sizes;
    for (int64_t i = 0; i < self.dim(); ++i) {
      const int64_t s = self.sizes[static_cast<size_t>(i)];
      if (i < d) shape.outer *= s;
      else if (i == d) shape.size = s;
      else shape.inner *= s;
      if (i != d) out_sizes.push_back(s);
      else if (keepdim != 0) out_sizes.push_back(1);
    }
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_contiguous(out_sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_contiguous(out_sizes, DType::Int64, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef i, read_tensor(indices.get(), "ret1"));
    const int64_t lines = shape.lines();
    if (lines > 0) {
      cudaStream_t stream = current_stream(self.device_index);
      KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
      // The first k sorted elements of line l = (outer o, inner n) land at
      // row l = o * inner + n of a [lines, k] buffer: the order of the
      // reduced result's elements, so the pick writes them contiguously.
      StridedIndexer sorted_index;
      sorted_index.ndim = 3;
      sorted_index.sizes[0] = shape.outer;
      sorted_index.sizes[1] = k;
      sorted_index.sizes[2] = shape.inner;
      sorted_index.strides[0] = shape.inner * k;
      sorted_index.strides[1] = 1;
      sorted_index.strides[2] = k;
      const auto n = static_cast<size_t>(lines * k);
      KILN_ASSIGN_OR_RETURN(DeviceBuffer sorted,
                            DeviceBuffer::allocate(n * self.element_bytes(), self.device_index, stream));
      KILN_ASSIGN_OR_RETURN(DeviceBuffer positions,
                            DeviceBuffer::allocate(n * sizeof(int64_t), self.device_index, stream));
      KILN_ASSIGN_OR_RETURN(size_t bytes, sort_lines_workspace(self.dtype, shape));
      DeviceBuffer workspace;
      if (bytes > 0) {
        KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(bytes, self.device_index, stream));
      }
      auto* pos = static_cast<int64_t*>(positions.get());
      KILN_RETURN_IF_ERROR(launch_sort_lines(self.data, self.dtype, in_index, shape, false, k, sorted.get(), pos,
                                             sorted_index, workspace.get(), bytes, stream));
      KILN_RETURN_IF_ERROR(launch_pick_sorted(sorted.get(), pos, self.dtype, lines, k, k - 1, v.data,
                                              static_cast<int64_t*>(i.data), stream));
    }
    KILN_RETURN_IF_ERROR(return_handle(values, ret0, "ret0"));
    return return_handle(indices, ret1, "ret1");
  });
}

}  // extern "C"
