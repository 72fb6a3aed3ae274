#include "shims/common/layout_util.h"

#include <algorithm>
#include <numeric>

#include "kiln/tensor.h"

namespace kiln::aoti {

bool non_overlapping_and_dense(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  std::vector<size_t> dims;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1) dims.push_back(i);
  }
  std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (size_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

std::vector<int64_t> strides_like(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  if (non_overlapping_and_dense(sizes, strides)) return {strides.begin(), strides.end()};
  // Dense strides in the input's memory order, as ATen's empty_like does: the
  // compiled model hard-codes the strides it saw under fake tensors, so a
  // fallback op's output must match them exactly. Order dimensions from
  // innermost (smallest stride) outwards with an insertion sort that leaves
  // ambiguous pairs (a zero stride) where they are and puts the larger of two
  // equal-stride dimensions outside.
  const size_t n = sizes.size();
  std::vector<size_t> order(n);  // order[0] is the innermost dimension
  for (size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  auto compare = [&](size_t a, size_t b) -> int {  // > 0: b belongs inside a
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  for (size_t i = 1; i < n; ++i) {
    size_t inner = i;
    for (size_t j = i; j-- > 0;) {
      const int c = compare(order[j], order[inner]);
      if (c > 0) {
        std::swap(order[j], order[inner]);
        inner = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> result(n);
  int64_t next = 1;
  for (size_t dim : order) {
    result[dim] = next;
    next *= std::max<int64_t>(sizes[dim], 1);
  }
  return result;
}

}  // namespace kiln::aoti
