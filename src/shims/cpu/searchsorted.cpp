// aoti_torch_cpu_searchsorted_Tensor, aoti_torch_cpu_searchsorted_Scalar,
// aoti_torch_cpu_bucketize_Tensor: for each value, the position in a sorted
// line of boundaries where it would be inserted (the first boundary >= value,
// or > value with right / side="right"). As ATen's CPU kernel:
// - boundaries are 1-D, or share all but their last dimension with the values;
//   `sorter` (int64, boundaries' shape) gives the sorted order of unsorted ones;
// - both are compared in ATen's result dtype of the two (a 0-d value tensor,
//   like a Scalar, does not widen dimensioned boundaries of the same kind; a
//   Scalar against integer boundaries compares in float32);
// - the bisection tests "not (boundary >= value)" ("not (boundary > value)"
//   for right), so NaN boundaries and values land where ATen puts them;
// - the result is a new contiguous int64 (int32 with out_int32) tensor of the
//   values' shape.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// ATen's combine_categories: `dimmed` comes from a tensor with dimensions,
// `lower` from a 0-d tensor or a Scalar; the lower one only decides the dtype
// when it is of a higher kind (integral < floating < complex).
DType combine_categories(DType dimmed, DType lower) {
  if (is_complex(dimmed)) return dimmed;
  if (is_complex(lower)) return is_floating(dimmed) ? promote_types(dimmed, DType::Complex64) : lower;
  if (is_floating(dimmed)) return dimmed;
  if (dimmed == DType::Bool || is_floating(lower)) return promote_types(dimmed, lower);
  return dimmed;
}

template <typename T>
int64_t bisect(const T* bd, const int64_t* sorter, int64_t n, T value, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const T b = bd[sorter ? sorter[mid] : mid];
    const bool go_right = right ? !(b > value) : !(b >= value);
    if (go_right) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

struct Search {
  const Tensor* boundaries = nullptr;
  const Tensor* values = nullptr;  // null for a Scalar value
  double scalar = 0.0;
  bool out_int32 = false;
  bool right = false;
  const Tensor* sorter = nullptr;
  const char* op = "searchsorted";
};

// The values converted to `common` (so compared exactly as ATen compares them).
template <typename T>
std::vector<T> as_common(const Tensor& t, DType common) {
  std::vector<T> v = read_elements<T>(t);
  if constexpr (std::is_same_v<T, double>)
    for (double& x : v) x = round_to_dtype(x, common);
  return v;
}

Error run_search(const Search& s, AtenTensorHandle* ret0) {
  const Tensor& bd = *s.boundaries;
  const bool scalar = s.values == nullptr;
  const std::vector<int64_t> out_sizes = scalar ? std::vector<int64_t>{} : s.values->sizes();
  const int64_t value_dim = scalar ? 0 : s.values->dim();
  if (bd.dim() == 0)
    return aoti::invalid(std::string("argument '") + (s.op[0] == 'b' ? "boundaries" : "sorted_sequence") +
                         "' is 0-d; it must have at least one dimension");
  if (bd.dim() > 1) {
    bool match = value_dim == bd.dim();
    for (int64_t d = 0; match && d + 1 < bd.dim(); ++d) match = bd.size(d) == s.values->size(d);
    if (!match)
      return aoti::invalid("argument 'sorted_sequence' has shape " + aoti::shape_string(bd.sizes()) +
                           ": it must be 1-D or share all but its last dimension with 'self' of shape " +
                           aoti::shape_string(out_sizes));
  }
  const int64_t n = bd.dim() == 0 ? 1 : bd.size(bd.dim() - 1);
  std::vector<int64_t> order;
  if (s.sorter != nullptr) {
    KILN_RETURN_IF_ERROR(same_dtype(*s.sorter, DType::Int64, "sorter"));
    if (s.sorter->sizes() != bd.sizes())
      return aoti::invalid("argument 'sorter' has shape " + aoti::shape_string(s.sorter->sizes()) + ", expected " +
                           aoti::shape_string(bd.sizes()) + " (the boundaries' shape)");
    order = read_elements<int64_t>(*s.sorter);
    for (int64_t i : order)
      if (i < 0 || i >= n)
        return aoti::invalid("argument 'sorter' holds index " + std::to_string(i) + ", out of range for " +
                             std::to_string(n) + " boundaries");
  }
  // A Scalar enters type promotion as the default dtype, float32.
  const DType common = scalar ? combine_categories(bd.dtype(), DType::Float32)
                       : value_dim == 0 && bd.dim() > 0 ? combine_categories(bd.dtype(), s.values->dtype())
                                                        : promote_types(bd.dtype(), s.values->dtype());
  if (!dtype_in(common, kAllTypes | kReducedFloat))
    return aoti::invalid(std::string("boundaries and values compare as ") + dtype_name(common) + ", which " + s.op +
                         " does not support on the CPU");
  const DType out_dtype = s.out_int32 ? DType::Int32 : DType::Int64;
  KILN_ASSIGN_OR_RETURN(Tensor out, new_cpu_tensor(out_sizes, out_dtype));
  const int64_t count = out.numel();
  std::vector<int64_t> result(static_cast<size_t>(count), 0);
  // Values per boundary line: all of them for 1-D boundaries, else the last dimension.
  const int64_t per_line = bd.dim() == 1 ? count : (value_dim == 0 ? 1 : s.values->size(value_dim - 1));
  auto search = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> b = as_common<T>(bd, common);
    std::vector<T> v;
    if (scalar) {
      if constexpr (std::is_same_v<T, double>) v.push_back(round_to_dtype(s.scalar, common));
      else v.push_back(T{});  // not reached: a Scalar always compares as a floating dtype
    } else {
      v = as_common<T>(*s.values, common);
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t line = per_line == 0 ? 0 : i / per_line;
      const int64_t* sorter = order.empty() ? nullptr : order.data() + line * n;
      result[static_cast<size_t>(i)] = bisect(b.data() + line * n, sorter, n, v[static_cast<size_t>(i)], s.right);
    }
  };
  if (is_floating(common)) search(double{});
  else search(int64_t{});
  write_elements(result.data(), out);
  return return_tensor(std::move(out), ret0, "ret0");
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

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_searchsorted_Tensor(AtenTensorHandle sorted_sequence,
                                                                   AtenTensorHandle self, int32_t out_int32,
                                                                   int32_t right, const char** side,
                                                                   AtenTensorHandle* sorter,
                                                                   AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_searchsorted_Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    Search s;
    KILN_ASSIGN_OR_RETURN(s.boundaries, cpu_tensor_arg(sorted_sequence, "sorted_sequence"));
    KILN_ASSIGN_OR_RETURN(s.values, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(s.sorter, optional_cpu_tensor_arg(sorter, "sorter"));
    KILN_ASSIGN_OR_RETURN(s.right, resolve_right(right, side));
    s.out_int32 = out_int32 != 0;
    if (s.values->dim() == 0 && s.boundaries->dim() > 1)
      return aoti::invalid("argument 'self' is 0-d, which needs 1-D 'sorted_sequence', not shape " +
                           aoti::shape_string(s.boundaries->sizes()));
    return run_search(s, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_searchsorted_Scalar(AtenTensorHandle sorted_sequence, double self,
                                                                   int32_t out_int32, int32_t right,
                                                                   const char** side, AtenTensorHandle* sorter,
                                                                   AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_searchsorted_Scalar", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    Search s;
    KILN_ASSIGN_OR_RETURN(s.boundaries, cpu_tensor_arg(sorted_sequence, "sorted_sequence"));
    KILN_ASSIGN_OR_RETURN(s.sorter, optional_cpu_tensor_arg(sorter, "sorter"));
    KILN_ASSIGN_OR_RETURN(s.right, resolve_right(right, side));
    s.scalar = self;
    s.out_int32 = out_int32 != 0;
    if (s.boundaries->dim() != 1)
      return aoti::invalid("argument 'self' is a Scalar, which needs 1-D 'sorted_sequence', not shape " +
                           aoti::shape_string(s.boundaries->sizes()));
    return run_search(s, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bucketize_Tensor(AtenTensorHandle self, AtenTensorHandle boundaries,
                                                                int32_t out_int32, int32_t right,
                                                                AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_bucketize_Tensor", [&]() -> Error {
    KILN_RETURN_IF_ERROR(aoti::out_arg(ret0, "ret0"));
    Search s;
    s.op = "bucketize";
    KILN_ASSIGN_OR_RETURN(s.values, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(s.boundaries, cpu_tensor_arg(boundaries, "boundaries"));
    if (s.boundaries->dim() != 1)
      return aoti::invalid("argument 'boundaries' has shape " + aoti::shape_string(s.boundaries->sizes()) +
                           ", expected 1-D");
    s.right = right != 0;
    s.out_int32 = out_int32 != 0;
    return run_search(s, ret0);
  });
}

}  // extern "C"
