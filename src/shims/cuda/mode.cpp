// aoti_torch_cuda_mode: the most frequent value of each line along `dim` and
// a position of it, as ATen's CUDA kernels give them (kernels/mode_kernel.h
// says how they differ from the CPU kernel's smallest value and last
// position). Lines of at most 2048 elements take ATen's block kernel,
// reproduced; longer lines (or tensors past 32-bit offsets, as ATen decides)
// are sorted stably (kernels/sort_kernel.h) and give the smallest of the
// most frequent values at its first position. Results are new contiguous
// tensors of the reduced shape; a reduced dimension of size 0 is refused, as
// are dtypes ATen's CUDA mode does not dispatch (complex, wide unsigned).
//
// Where the result can still differ from ATen's: lines longer than 2048 that
// hold NaN. ATen's sort there puts negative NaNs first and fails an internal
// assert when a NaN would be the mode; ours orders every NaN last (and
// float16/bfloat16 lines, which ATen merge-sorts with `<`, likewise).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "devices/cuda/kernels/mode_kernel.h"
#include "devices/cuda/kernels/sort_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/sorted_lines.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// ATen's canUse32BitIndexMath(self): fewer than INT32_MAX elements and the
// last one's offset below INT32_MAX. When false ATen sorts even short lines.
bool offsets_fit_32_bits(const TensorRef& t) {
  constexpr int64_t limit = std::numeric_limits<int32_t>::max();
  const int64_t numel = t.numel();
  if (numel >= limit) return false;
  if (numel == 0) return true;
  int64_t linear = numel - 1, offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t size = t.sizes[static_cast<size_t>(d)];
    offset += (linear % size) * t.strides[static_cast<size_t>(d)];
    linear /= size;
  }
  return offset < limit;
}

Error mode_by_sorting(const TensorRef& self, int64_t d, int64_t size, void* values, int64_t* indices) {
  const LineShape shape = line_shape(self, d);
  const int64_t lines = shape.lines();
  KILN_ASSIGN_OR_RETURN(SortedRows sorted, sort_lines_to_rows(self, shape, size));
  return launch_mode_sorted(sorted.values.get(), self.dtype, static_cast<int64_t*>(sorted.positions.get()), lines,
                            size, values, indices, current_stream(self.device_index));
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mode(AtenTensorHandle self_h, int64_t dim, int32_t keepdim,
                                                     AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda_mode", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    if (!mode_supports(self.dtype))
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(self.dtype) +
                           ", which mode does not support on CUDA");
    const int64_t size = self.dim() == 0 ? 1 : self.sizes[static_cast<size_t>(d)];
    if (size == 0)
      return aoti::invalid("argument 'self' has size 0 in dimension " + std::to_string(d) + ", which mode reduces");
    const std::vector<int64_t> out_sizes = aoti::reduced_sizes(self.sizes, d, keepdim != 0);
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_contiguous(out_sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_contiguous(out_sizes, DType::Int64, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef i, read_tensor(indices.get(), "ret1"));
    const int64_t lines = self.numel() / size;
    auto* idx = static_cast<int64_t*>(i.data);
    if (lines > 0 && size <= kModeBlockMaxLine && offsets_fit_32_bits(self)) {
      // The block kernel reads line l as row-major elements [l * size, (l + 1) * size)
      // of self with `dim` moved last; the other dimensions keep their order, the result's.
      std::vector<int64_t> sizes, strides;
      for (int64_t k = 0; k < self.dim(); ++k) {
        if (k == d) continue;
        sizes.push_back(self.sizes[static_cast<size_t>(k)]);
        strides.push_back(self.strides[static_cast<size_t>(k)]);
      }
      if (self.dim() > 0) {
        sizes.push_back(size);
        strides.push_back(self.strides[static_cast<size_t>(d)]);
      }
      KILN_ASSIGN_OR_RETURN(StridedIndexer line_index, indexer(sizes, strides));
      KILN_RETURN_IF_ERROR(launch_mode_block(self.data, self.dtype, line_index, lines, size, v.data, idx,
                                             current_stream(self.device_index)));
    } else if (lines > 0) {
      KILN_RETURN_IF_ERROR(mode_by_sorting(self, d, size, v.data, idx));
    }
    KILN_RETURN_IF_ERROR(return_handle(values, ret0, "ret0"));
    return return_handle(indices, ret1, "ret1");
  });
}

}  // extern "C"
