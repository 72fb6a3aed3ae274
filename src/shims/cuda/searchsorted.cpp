// aoti_torch_cuda_searchsorted_Tensor, aoti_torch_cuda_searchsorted_Scalar,
// aoti_torch_cuda_bucketize_Tensor: for each value, the position in a sorted
// line of boundaries where it would be inserted (the first boundary >= value,
// or > value with right / side="right"), one thread per value
// (kernels/search_kernel.cu). The arguments are checked as the CPU op checks
// them (shims/common/search_args.h) and compared in the same result dtype;
// the result is a new contiguous int64 (int32 with out_int32) tensor of the
// values' shape, owned by the caller. Nothing is read back to the host, so
// sorter indices are not range-checked up front: an index outside the line
// yields -1 for the values whose search meets it, never a read past memory.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "devices/cuda/kernels/search_kernel.h"
#include "shims/common/search_args.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

struct Search {
  const TensorRef* boundaries = nullptr;
  const TensorRef* values = nullptr;  // null for a Scalar value
  double scalar = 0.0;
  bool out_int32 = false;
  bool right = false;
  const TensorRef* sorter = nullptr;
  const char* op = "searchsorted";
  const char* boundaries_name = "sorted_sequence";
};

Error run_search(const Search& s, AtenTensorHandle* ret0) {
  const TensorRef& bd = *s.boundaries;
  const bool scalar = s.values == nullptr;
  const std::vector<int64_t> out_sizes = scalar ? std::vector<int64_t>{} : s.values->sizes;
  const int64_t value_dim = scalar ? 0 : s.values->dim();
  const std::span<const int64_t> values_sizes(out_sizes);
  KILN_RETURN_IF_ERROR(
      aoti::search::boundaries_shape(bd.sizes, scalar ? nullptr : &values_sizes, s.boundaries_name));
  if (s.sorter != nullptr) {
    KILN_RETURN_IF_ERROR(aoti::search::sorter_args(s.sorter->dtype, s.sorter->sizes, bd.sizes));
    if (s.sorter->device_index != bd.device_index)
      return aoti::invalid("argument 'sorter' is on another CUDA device than '" + std::string(s.boundaries_name) +
                           "'");
  }
  if (!scalar && s.values->device_index != bd.device_index)
    return aoti::invalid("argument 'self' is on another CUDA device than '" + std::string(s.boundaries_name) + "'");
  for (const TensorRef* t : {s.boundaries, s.values}) {
    if (t == nullptr || aoti::search::searchable(t->dtype) || t->dtype == DType::Bool) continue;
    return aoti::invalid(std::string("argument '") + (t == s.values ? "self" : s.boundaries_name) +
                         "' has dtype " + dtype_name(t->dtype) + ", which " + s.op + " does not support on CUDA");
  }
  // Each operand's own dtype was checked above, so no pair reaching here
  // gives a dtype ATen's ResultType would refuse.
  const DType common = aoti::search::compare_dtype_of(
      bd.dtype, scalar ? std::nullopt : std::optional<DType>(s.values->dtype), value_dim);
  KILN_RETURN_IF_ERROR(aoti::search::compare_dtype(common, s.op, "CUDA"));
  const DType out_dtype = s.out_int32 ? DType::Int32 : DType::Int64;
  KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(out_sizes, out_dtype, bd.device_index));
  KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
  SearchArgs a;
  a.boundaries = bd.data;
  a.boundaries_dtype = bd.dtype;
  KILN_ASSIGN_OR_RETURN(a.boundaries_index, indexer(bd));
  if (!scalar) {
    a.values = s.values->data;
    a.values_dtype = s.values->dtype;
    KILN_ASSIGN_OR_RETURN(a.values_index, indexer(*s.values));
  }
  a.scalar = s.scalar;
  if (s.sorter != nullptr) {
    a.sorter = static_cast<const int64_t*>(s.sorter->data);
    KILN_ASSIGN_OR_RETURN(a.sorter_index, indexer(*s.sorter));
  }
  a.common = common;
  a.n = bd.sizes.back();
  a.count = o.numel();
  // Values per boundary line: all of them for 1-D boundaries, else the last dimension.
  a.per_line = bd.dim() == 1 ? a.count : s.values->sizes.back();
  if (a.per_line <= 0) a.per_line = 1;
  a.right = s.right;
  a.out = o.data;
  a.out_dtype = out_dtype;
  KILN_RETURN_IF_ERROR(launch_search(a, current_stream(bd.device_index)));
  return return_handle(out, ret0, "ret0");
}

Result<std::optional<TensorRef>> optional_tensor(AtenTensorHandle* h, const char* name) {
  if (h == nullptr || *h == nullptr) return std::optional<TensorRef>{};
  KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(*h, name));
  return std::optional<TensorRef>{std::move(t)};
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_searchsorted_Tensor(AtenTensorHandle sorted_sequence,
                                                                    AtenTensorHandle self, int32_t out_int32,
                                                                    int32_t right, const char** side,
                                                                    AtenTensorHandle* sorter,
                                                                    AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_searchsorted_Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef bd, read_tensor(sorted_sequence, "sorted_sequence"));
    KILN_ASSIGN_OR_RETURN(TensorRef values, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(std::optional<TensorRef> order, optional_tensor(sorter, "sorter"));
    Search s;
    s.boundaries = &bd;
    s.values = &values;
    s.sorter = order ? &*order : nullptr;
    KILN_ASSIGN_OR_RETURN(s.right, aoti::search::resolve_right(right, side));
    s.out_int32 = out_int32 != 0;
    KILN_RETURN_IF_ERROR(aoti::search::zero_dim_values(values.sizes, bd.sizes));
    return run_search(s, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_searchsorted_Scalar(AtenTensorHandle sorted_sequence, double self,
                                                                    int32_t out_int32, int32_t right,
                                                                    const char** side, AtenTensorHandle* sorter,
                                                                    AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_searchsorted_Scalar", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef bd, read_tensor(sorted_sequence, "sorted_sequence"));
    KILN_ASSIGN_OR_RETURN(std::optional<TensorRef> order, optional_tensor(sorter, "sorter"));
    Search s;
    s.boundaries = &bd;
    s.sorter = order ? &*order : nullptr;
    KILN_ASSIGN_OR_RETURN(s.right, aoti::search::resolve_right(right, side));
    s.scalar = self;
    s.out_int32 = out_int32 != 0;
    KILN_RETURN_IF_ERROR(aoti::search::scalar_values(bd.sizes));
    return run_search(s, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_bucketize_Tensor(AtenTensorHandle self, AtenTensorHandle boundaries,
                                                                 int32_t out_int32, int32_t right,
                                                                 AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_bucketize_Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    KILN_ASSIGN_OR_RETURN(TensorRef values, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef bd, read_tensor(boundaries, "boundaries"));
    KILN_RETURN_IF_ERROR(aoti::search::bucketize_boundaries(bd.sizes));
    Search s;
    s.op = "bucketize";
    s.boundaries_name = "boundaries";
    s.boundaries = &bd;
    s.values = &values;
    s.right = right != 0;
    s.out_int32 = out_int32 != 0;
    return run_search(s, ret0);
  });
}

}  // extern "C"
