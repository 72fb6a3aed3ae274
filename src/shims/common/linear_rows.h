// The rows a linear-style op ([..., K] @ W^T -> [..., N]) runs over: x's
// leading dims flattened, K its last size, the result x's sizes with the last
// one N. Shared by the quantized linears' argument checks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::aoti {

struct LinearRows {
  int64_t rows = 0;  ///< numel / K (1 for a 1-d x)
  int64_t k = 0;
  std::vector<int64_t> out_sizes;
};

/// x must have at least one dimension (the callers check).
inline LinearRows linear_rows(std::span<const int64_t> x, int64_t n) {
  LinearRows r;
  r.k = x.back();
  r.rows = 1;
  for (size_t i = 0; i + 1 < x.size(); ++i) r.rows *= x[i];
  r.out_sizes.assign(x.begin(), x.end());
  r.out_sizes.back() = n;
  return r;
}

}  // namespace kiln::aoti
