// aoti_torch_cuda_searchsorted_Tensor, aoti_torch_cuda_searchsorted_Scalar,
// aoti_torch_cuda_bucketize_Tensor: for each value, the position in a sorted
// line of boundaries where it would be inserted (the first boundary >= value,
// or > value with right / side="right"), one thread per value
// (kernels/search_kernel.cu). The arguments are checked as the CPU op checks
// them (src/shims/cpu/searchsorted.cpp) and compared in the same result dtype;
// the result is a new contiguous int64 (int32 with out_int32) tensor of the
// values' shape, owned by the caller. Nothing is read back to the host, so
// sorter indices are not range-checked up front: an index outside the line
// yields -1 for the values whose search meets it, never a read past memory.
#include <optional>
#include <string>
#include <vector>

#include "core/dtype_promotion.h"
#include "devices/cuda/kernels/search_kernel.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/op_util.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// The dtypes ATen's CUDA kernel dispatches on.
bool searchable(DType d) {
  return is_floating_dtype(d) || (is_integral_dtype(d) && d != DType::Bool && d != DType::UInt16 &&
                                  d != DType::UInt32 && d != DType::UInt64);
}

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
  if (bd.dim() == 0)
    return aoti::invalid(std::string("argument '") + s.boundaries_name +
                         "' is 0-d; it must have at least one dimension");
  if (bd.dim() > 1) {
    bool match = value_dim == bd.dim();
    for (int64_t d = 0; match && d + 1 < bd.dim(); ++d)
      match = bd.sizes[static_cast<size_t>(d)] == s.values->sizes[static_cast<size_t>(d)];
    if (!match)
      return aoti::invalid("argument 'sorted_sequence' has shape " + aoti::shape_string(bd.sizes) +
                           ": it must be 1-D or share all but its last dimension with 'self' of shape " +
                           aoti::shape_string(out_sizes));
  }
  if (s.sorter != nullptr) {
    if (s.sorter->dtype != DType::Int64)
      return aoti::invalid(std::string("argument 'sorter' has dtype ") + dtype_name(s.sorter->dtype) +
                           ", expected int64");
    if (s.sorter->sizes != bd.sizes)
      return aoti::invalid("argument 'sorter' has shape " + aoti::shape_string(s.sorter->sizes) + ", expected " +
                           aoti::shape_string(bd.sizes) + " (the boundaries' shape)");
    if (s.sorter->device_index != bd.device_index)
      return aoti::invalid("argument 'sorter' is on another CUDA device than '" + std::string(s.boundaries_name) +
                           "'");
  }
  if (!scalar && s.values->device_index != bd.device_index)
    return aoti::invalid("argument 'self' is on another CUDA device than '" + std::string(s.boundaries_name) + "'");
  for (const TensorRef* t : {s.boundaries, s.values}) {
    if (t == nullptr || searchable(t->dtype) || t->dtype == DType::Bool) continue;
    return aoti::invalid(std::string("argument '") + (t == s.values ? "self" : s.boundaries_name) +
                         "' has dtype " + dtype_name(t->dtype) + ", which " + s.op + " does not support on CUDA");
  }
  // ATen's result dtype of the two: a 0-d value tensor, or a Scalar (as the
  // default dtype, float32), only decides it from a higher dtype class.
  ResultType rt;
  rt.add_tensor(bd.dtype, bd.dim());
  if (scalar) rt.add_double_scalar();
  else rt.add_tensor(s.values->dtype, value_dim);
  KILN_ASSIGN_OR_RETURN(const DType common, rt.dtype());
  if (!searchable(common))
    return aoti::invalid(std::string("boundaries and values compare as ") + dtype_name(common) + ", which " + s.op +
                         " does not support on CUDA");
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

// side, when given, decides; it may not contradict right=True.
Result<bool> resolve_right(int32_t right, const char** side) {
  if (side == nullptr || *side == nullptr) return right != 0;
  const std::string s = *side;
  if (s != "left" && s != "right")
    return aoti::invalid("argument 'side' is '" + s + "', expected 'left' or 'right'");
  if (s == "left" && right != 0) return aoti::invalid("argument 'side' is 'left' while 'right' is true");
  return s == "right";
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
    KILN_ASSIGN_OR_RETURN(s.right, resolve_right(right, side));
    s.out_int32 = out_int32 != 0;
    if (values.dim() == 0 && bd.dim() > 1)
      return aoti::invalid("argument 'self' is 0-d, which needs 1-D 'sorted_sequence', not shape " +
                           aoti::shape_string(bd.sizes));
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
    KILN_ASSIGN_OR_RETURN(s.right, resolve_right(right, side));
    s.scalar = self;
    s.out_int32 = out_int32 != 0;
    if (bd.dim() != 1)
      return aoti::invalid("argument 'self' is a Scalar, which needs 1-D 'sorted_sequence', not shape " +
                           aoti::shape_string(bd.sizes));
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
    if (bd.dim() != 1)
      return aoti::invalid("argument 'boundaries' has shape " + aoti::shape_string(bd.sizes) + ", expected 1-D");
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
