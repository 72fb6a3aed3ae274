// aoti_torch_cuda_sort, _sort_stable, _topk: CUB's stable segmented sort of
// each line along `dim` (kernels/sort_kernel.cu). Results as ATen's meta
// functions lay them out (the model library indexes them with those strides):
// sort's like empty_like(self), topk's contiguous. Every sort here is stable,
// which also satisfies stable=False; topk returns its k elements sorted even
// when sorted=False (ATen leaves that order unspecified).
#include <string>
#include <vector>

#include "devices/cuda/kernels/sort_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"
#include "shims/cuda/sorted_lines.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error sort_into(const TensorRef& self, int64_t d, bool descending, int64_t count, const TensorRef& values,
                const TensorRef& indices) {
  if (!sortable(self.dtype))
    return aoti::invalid(std::string("sort does not support dtype ") + dtype_name(self.dtype));
  if (values.strides != indices.strides) return set_error(Error::Internal, "values and indices laid out differently");
  KILN_ASSIGN_OR_RETURN(StridedIndexer out_index, indexer(values));
  return sort_lines(self, line_shape(self, d), descending, count, values.data, static_cast<int64_t*>(indices.data),
                    out_index);
}

AOTITorchError sort(const char* fn, AtenTensorHandle self_h, int64_t dim, int32_t descending, AtenTensorHandle* ret0,
                    AtenTensorHandle* ret1) {
  return aoti::guarded(fn, [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_tensor_like(self, self.dtype));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_tensor_like(self, DType::Int64));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef i, read_tensor(indices.get(), "ret1"));
    const int64_t size = self.dim() == 0 ? 1 : self.sizes[static_cast<size_t>(d)];
    KILN_RETURN_IF_ERROR(sort_into(self, d, descending != 0, size, v, i));
    KILN_RETURN_IF_ERROR(return_handle(values, ret0, "ret0"));
    return return_handle(indices, ret1, "ret1");
  });
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                     AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return sort("aoti_torch_cuda_sort", self, dim, descending, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                            int32_t descending, AtenTensorHandle* ret0,
                                                            AtenTensorHandle* ret1) {
  return sort("aoti_torch_cuda_sort_stable", self, dim, descending, ret0, ret1);
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self_h, int64_t k, int64_t dim, int32_t largest,
                                                     int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return aoti::guarded("aoti_torch_cuda_topk", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret1, "ret1"));
    KILN_ASSIGN_OR_RETURN(TensorRef self, read_tensor(self_h, "self"));
    KILN_ASSIGN_OR_RETURN(int64_t d, wrap_dim(dim, self.dim()));
    if (self.dtype == DType::Bool) return aoti::invalid("topk does not support dtype bool");
    const int64_t size = self.dim() == 0 ? 1 : self.sizes[static_cast<size_t>(d)];
    if (k < 0 || k > size)
      return aoti::invalid("selected index k out of range: k = " + std::to_string(k) + ", dimension size " +
                           std::to_string(size));
    std::vector<int64_t> sizes = self.sizes;
    if (!sizes.empty()) sizes[static_cast<size_t>(d)] = k;
    KILN_ASSIGN_OR_RETURN(OwnedHandle values, new_contiguous(sizes, self.dtype, self.device_index));
    KILN_ASSIGN_OR_RETURN(OwnedHandle indices, new_contiguous(sizes, DType::Int64, self.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef v, read_tensor(values.get(), "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef i, read_tensor(indices.get(), "ret1"));
    KILN_RETURN_IF_ERROR(sort_into(self, d, largest != 0, k, v, i));
    KILN_RETURN_IF_ERROR(return_handle(values, ret0, "ret0"));
    return return_handle(indices, ret1, "ret1");
  });
}

}  // extern "C"
