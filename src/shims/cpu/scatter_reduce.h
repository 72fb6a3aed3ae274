// The reductions scatter_reduce and index_reduce share: each source element
// is folded into one target element of a row-major buffer. As ATen: without
// include_self the targeted elements start from the reduction's identity;
// amax/amin propagate NaN; mean divides by the number of contributions (plus
// one for self), flooring for integer dtypes; bool has no mean, complex no
// amax/amin. Integer sums and products wrap like the dtype's own arithmetic.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/common/scatter_args.h"
#include "shims/cpu/op_args.h"

namespace kiln::cpu {

using aoti::Reduction;

/// One (target, source) pair: positions in the row-major result and source buffers.
struct ReducePair {
  int64_t target;
  int64_t source;
};

namespace detail {

template <typename T>
T identity(Reduction r) {
  if constexpr (std::is_same_v<T, int64_t>) {
    if (r == Reduction::Max) return std::numeric_limits<int64_t>::min();
    if (r == Reduction::Min) return std::numeric_limits<int64_t>::max();
  } else if constexpr (std::is_same_v<T, double>) {
    if (r == Reduction::Max) return -std::numeric_limits<double>::infinity();
    if (r == Reduction::Min) return std::numeric_limits<double>::infinity();
  }
  return r == Reduction::Prod ? T(1) : T(0);
}

template <typename T>
T combine(Reduction r, T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) {
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (r) {
      case Reduction::Replace: return b;
      case Reduction::Sum:
      case Reduction::Mean: return static_cast<int64_t>(ua + ub);
      case Reduction::Prod: return static_cast<int64_t>(ua * ub);
      case Reduction::Max: return a > b ? a : b;
      case Reduction::Min: return a < b ? a : b;
    }
    return a;
  } else if constexpr (std::is_same_v<T, double>) {
    switch (r) {
      case Reduction::Replace: return b;
      case Reduction::Sum:
      case Reduction::Mean: return a + b;
      case Reduction::Prod: return a * b;
      case Reduction::Max: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : (a > b ? a : b);
      case Reduction::Min: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : (a < b ? a : b);
    }
    return a;
  } else {
    switch (r) {
      case Reduction::Replace: return b;
      case Reduction::Sum:
      case Reduction::Mean: return a + b;
      case Reduction::Prod: return a * b;
      default: return a;
    }
  }
}

template <typename T>
T divide(T a, int64_t n) {
  if constexpr (std::is_same_v<T, int64_t>) {
    int64_t q = a / n;
    if (a % n != 0 && (a < 0) != (n < 0)) --q;
    return q;
  } else {
    return a / static_cast<double>(n);
  }
}

}  // namespace detail

/// Folds source[pair.source] into result[pair.target] for every pair, in order.
template <typename T>
void apply_reduction(std::vector<T>& result, const std::vector<T>& source, const std::vector<ReducePair>& pairs,
                     Reduction r, bool include_self) {
  if (!include_self && r != Reduction::Replace)
    for (const ReducePair& p : pairs) result[static_cast<size_t>(p.target)] = detail::identity<T>(r);
  std::vector<int64_t> count;
  if (r == Reduction::Mean) count.assign(result.size(), include_self ? 1 : 0);
  for (const ReducePair& p : pairs) {
    T& x = result[static_cast<size_t>(p.target)];
    x = detail::combine<T>(r, x, source[static_cast<size_t>(p.source)]);
    if (r == Reduction::Mean) ++count[static_cast<size_t>(p.target)];
  }
  if (r == Reduction::Mean)
    for (size_t i = 0; i < result.size(); ++i)
      if (count[i] > 0) result[i] = detail::divide<T>(result[i], count[i]);
}

/// Sizes with a 0-d tensor seen as 1-d of one element.
inline std::vector<int64_t> nonempty_sizes(const Tensor& t) { return aoti::nonempty_sizes(t.sizes()); }

}  // namespace kiln::cpu
