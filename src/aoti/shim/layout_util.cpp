#include "aoti/shim/layout_util.h"

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
  return contiguous_strides(sizes);
}

}  // namespace kiln::aoti
