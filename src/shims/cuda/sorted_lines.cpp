#include "shims/cuda/sorted_lines.h"

#include "shims/cuda/op_util.h"

namespace kiln::cudadev {

Error sort_lines(const TensorRef& self, const LineShape& shape, bool descending, int64_t count, void* values,
                 int64_t* positions, const StridedIndexer& out_index) {
  KILN_ASSIGN_OR_RETURN(StridedIndexer in_index, indexer(self));
  cudaStream_t stream = current_stream(self.device_index);
  KILN_ASSIGN_OR_RETURN(size_t bytes, sort_lines_workspace(self.dtype, shape));
  DeviceBuffer workspace;
  if (bytes > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(bytes, self.device_index, stream));
  }
  return launch_sort_lines(self.data, self.dtype, in_index, shape, descending, count, values, positions, out_index,
                           workspace.get(), bytes, stream);
}

Result<SortedRows> sort_lines_to_rows(const TensorRef& self, const LineShape& shape, int64_t count) {
  StridedIndexer rows;
  rows.ndim = 3;
  rows.sizes[0] = shape.outer;
  rows.sizes[1] = count;
  rows.sizes[2] = shape.inner;
  rows.strides[0] = shape.inner * count;
  rows.strides[1] = 1;
  rows.strides[2] = count;
  const auto n = static_cast<size_t>(shape.lines() * count);
  cudaStream_t stream = current_stream(self.device_index);
  SortedRows sorted;
  KILN_ASSIGN_OR_RETURN(sorted.values, DeviceBuffer::allocate(n * self.element_bytes(), self.device_index, stream));
  KILN_ASSIGN_OR_RETURN(sorted.positions, DeviceBuffer::allocate(n * sizeof(int64_t), self.device_index, stream));
  KILN_RETURN_IF_ERROR(sort_lines(self, shape, false, count, sorted.values.get(),
                                  static_cast<int64_t*>(sorted.positions.get()), rows));
  return sorted;
}

}  // namespace kiln::cudadev
