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
#include <span>
#include <string>
#include <vector>

#include "shims/common/search_args.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/cpu/ordering.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

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
  const std::span<const int64_t> values_sizes(out_sizes);
  KILN_RETURN_IF_ERROR(aoti::search::boundaries_shape(bd.sizes(), scalar ? nullptr : &values_sizes,
                                                      s.op[0] == 'b' ? "boundaries" : "sorted_sequence"));
  const int64_t n = bd.dim() == 0 ? 1 : bd.size(bd.dim() - 1);
  std::vector<int64_t> order;
  if (s.sorter != nullptr) {
    KILN_RETURN_IF_ERROR(aoti::search::sorter_args(s.sorter->dtype(), s.sorter->sizes(), bd.sizes()));
    order = read_elements<int64_t>(*s.sorter);
    for (int64_t i : order)
      if (i < 0 || i >= n)
        return aoti::invalid("argument 'sorter' holds index " + std::to_string(i) + ", out of range for " +
                             std::to_string(n) + " boundaries");
  }
  const DType common = aoti::search::compare_dtype_of(
      bd.dtype(), scalar ? std::nullopt : std::optional<DType>(s.values->dtype()), value_dim);
  KILN_RETURN_IF_ERROR(aoti::search::compare_dtype(common, s.op, "the CPU"));
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
    KILN_ASSIGN_OR_RETURN(s.right, aoti::search::resolve_right(right, side));
    s.out_int32 = out_int32 != 0;
    KILN_RETURN_IF_ERROR(aoti::search::zero_dim_values(s.values->sizes(), s.boundaries->sizes()));
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
    KILN_ASSIGN_OR_RETURN(s.right, aoti::search::resolve_right(right, side));
    s.scalar = self;
    s.out_int32 = out_int32 != 0;
    KILN_RETURN_IF_ERROR(aoti::search::scalar_values(s.boundaries->sizes()));
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
    KILN_RETURN_IF_ERROR(aoti::search::bucketize_boundaries(s.boundaries->sizes()));
    s.right = right != 0;
    s.out_int32 = out_int32 != 0;
    return run_search(s, ret0);
  });
}

}  // extern "C"
