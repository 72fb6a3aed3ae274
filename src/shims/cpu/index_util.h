// Helpers shared by the indexing ops (index, index_put, scatter, gather-like
// reductions, embedding_bag, cat): index-tensor checks with messages that name
// the offending index value, broadcasting views, and the output strides
// ATen's empty_like(preserve_format) and suggest_memory_format give.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/op_args.h"

namespace kiln::cpu {

/// `t` as an index tensor: error unless it is int64 or int32.
inline Error index_dtype_check(const Tensor& t, const char* name) { return aoti::index_dtype_check(t.dtype(), name); }

/// Error unless `t` is a bool mask.
inline Error bool_mask_check(const Tensor& t, const char* name) {
  if (t.dtype() != DType::Bool)
    return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype()) +
                         ", expected bool");
  return Error::Ok;
}

/// `v` wrapped once (negative counts from the end) when `wrap`, checked to be
/// in [0, size): the message names the value, the dimension and its size.
inline Result<int64_t> checked_index(int64_t v, int64_t size, int64_t dim, const char* name, bool wrap) {
  const int64_t w = (wrap && v < 0) ? v + size : v;
  if (w < 0 || w >= size) return aoti::index_out_of_bounds(v, size, dim, name);
  return w;
}

/// The broadcast of two shapes (numpy rules), or nullopt if they do not broadcast.
inline std::optional<std::vector<int64_t>> broadcast_shapes(std::span<const int64_t> a,
                                                            std::span<const int64_t> b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// A view of `t` expanded to `sizes` (which `t` broadcasts to): broadcast
/// dimensions get stride 0. The view reaches no element outside `t`'s.
inline Tensor expand_view(const Tensor& t, std::span<const int64_t> sizes) {
  const size_t n = sizes.size(), k = static_cast<size_t>(t.dim());
  std::vector<int64_t> strides(n, 0);
  for (size_t i = 0; i < k; ++i) {
    const size_t o = n - k + i;
    strides[o] = t.sizes()[i] == 1 && sizes[o] != 1 ? 0 : t.strides()[i];
  }
  return Tensor(t.storage(), t.dtype(), std::vector<int64_t>(sizes.begin(), sizes.end()), strides,
                t.storage_offset());
}

/// True when `t`'s elements tile a block of exactly numel() elements with no
/// overlap (some permutation of contiguous strides).
inline bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<size_t> order;
  for (size_t d = 0; d < t.sizes().size(); ++d)
    if (t.sizes()[d] != 1) order.push_back(d);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t.strides()[a] < t.strides()[b]; });
  int64_t expected = 1;
  for (size_t d : order) {
    if (t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}

/// Strides of ATen's empty_like(t) (preserve_format): t's own strides when it
/// is non-overlapping and dense, else contiguous.
inline std::vector<int64_t> preserved_strides(const Tensor& t) {
  if (t.numel() > 0 && non_overlapping_and_dense(t)) return t.strides();
  return contiguous_strides(t.sizes());
}

/// A new CPU tensor with `t`'s values, dtype and sizes, laid out as ATen's
/// clone() (preserve_format) lays it out.
inline Result<Tensor> clone_preserving(const Tensor& t) {
  const std::vector<int64_t> strides = preserved_strides(t);
  KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::empty_strided(t.sizes(), strides, t.dtype(), Device{DeviceType::CPU, 0}));
  if (t.numel() > 0) KILN_RETURN_IF_ERROR(copy_tensor(out, t));
  return out;
}

/// Row-major coordinates of flat index `k` in `sizes`, into `coord`.
inline void unravel(int64_t k, std::span<const int64_t> sizes, std::vector<int64_t>& coord) {
  coord.resize(sizes.size());
  for (size_t j = sizes.size(); j-- > 0;) {
    coord[j] = sizes[j] == 0 ? 0 : k % sizes[j];
    k = sizes[j] == 0 ? 0 : k / sizes[j];
  }
}

}  // namespace kiln::cpu
