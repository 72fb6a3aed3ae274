// Row-major walks over strided tensors: the one loop every CPU op uses to read
// or write a tensor of any strides (transposed, broadcast with stride 0,
// offset views) in logical element order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::cpu {

/// Calls fn(k, offset) for k = 0..numel-1 in row-major logical order, where
/// `offset` is element k's position in elements from element 0 under `strides`.
template <typename Fn>
void for_each_offset(std::span<const int64_t> sizes, std::span<const int64_t> strides, Fn&& fn) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  const size_t dim = sizes.size();
  std::vector<int64_t> idx(dim, 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    fn(k, off);
    for (size_t j = dim; j-- > 0;) {
      if (++idx[j] < sizes[j]) {
        off += strides[j];
        break;
      }
      off -= strides[j] * (sizes[j] - 1);
      idx[j] = 0;
    }
  }
}

/// A tensor seen along one dimension: `outer` blocks of `size` elements, each
/// element `inner` apart, in a contiguous row-major buffer. Element i of line
/// (o, j) sits at (o * size + i) * inner + j.
struct DimSplit {
  int64_t outer = 1;
  int64_t size = 1;
  int64_t inner = 1;

  static DimSplit of(std::span<const int64_t> sizes, int64_t dim) {
    DimSplit s;
    for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
      if (d < dim) s.outer *= sizes[d];
      else if (d == dim) s.size = sizes[d];
      else s.inner *= sizes[d];
    }
    return s;
  }
  int64_t lines() const { return outer * inner; }
  /// Offset of element 0 of line `line` (0 <= line < lines()).
  int64_t line_start(int64_t line) const { return (line / inner) * size * inner + line % inner; }
};

}  // namespace kiln::cpu
