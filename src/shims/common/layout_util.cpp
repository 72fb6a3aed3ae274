#include "shims/common/layout_util.h"

#include <algorithm>
#include <numeric>

#include <string>

#include "kiln/tensor.h"
#include "shims/common/shim_util.h"

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

bool strides_like_channels_last(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  const size_t rank = sizes.size();
  if (rank != 4 && rank != 5) return false;
  if (strides[1] == 0) return false;
  // C, then W, H (, D) from the inside out, then N.
  std::vector<size_t> order{1};
  for (size_t d = rank - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t min = 0;
  for (size_t d : order) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    // N and C with equal strides (N of size 1 after C of size 1, say) is
    // ambiguous; c10 calls it contiguous.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

std::vector<int64_t> channels_last_strides(std::span<const int64_t> sizes) {
  const size_t rank = sizes.size();
  std::vector<int64_t> strides(rank, 1);
  if (rank != 4 && rank != 5) return strides;
  int64_t s = sizes[1];
  for (size_t d = rank - 1; d >= 2; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
  strides[0] = s;
  return strides;
}

Result<std::vector<int64_t>> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b,
                                              const char* name_a, const char* name_b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      return invalid(std::string("the shapes of '") + name_a + "' " + shape_string(a) + " and '" + name_b + "' " +
                     shape_string(b) + " do not broadcast (dimension " + std::to_string(i) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> elementwise_strides(std::span<const int64_t> shape,
                                         std::span<const std::vector<int64_t>> input_strides) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(nd));  // perm[0] is the innermost dimension
  for (int64_t i = 0; i < nd; ++i) perm[static_cast<size_t>(i)] = nd - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const std::vector<int64_t>& strides : input_strides) {
      const int64_t s0 = strides[static_cast<size_t>(d0)], s1 = strides[static_cast<size_t>(d1)];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[static_cast<size_t>(d0)] > shape[static_cast<size_t>(d1)]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < nd; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
      if (c > 0) {
        std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> strides(static_cast<size_t>(nd));
  int64_t s = 1;
  for (int64_t d : perm) {
    strides[static_cast<size_t>(d)] = s;
    s *= std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
  }
  return strides;
}

}  // namespace kiln::aoti
