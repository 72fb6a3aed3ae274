// The FFT ops' shared arguments (_fft_r2c, _fft_c2c, on every device): the
// transformed dimensions, checked as ATen checks them, and the scale of a
// normalization mode. The devices differ only in how they transform.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "shims/common/op_util.h"

namespace kiln::aoti {

/// `dim` wrapped into [0, rank) with no repeats, or an error naming it; an
/// empty input is refused (the FFT needs one element).
inline Result<std::vector<int64_t>> fft_dims_arg(std::span<const int64_t> sizes, const int64_t* dim,
                                                 int64_t dim_len) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> raw, int_array_arg(dim, dim_len, "dim"));
  const auto rank = static_cast<int64_t>(sizes.size());
  if (rank == 0 && !raw.empty()) return invalid("argument 'self' is 0-d; it has no dimension to transform");
  std::vector<int64_t> dims;
  for (int64_t d : raw) {
    KILN_ASSIGN_OR_RETURN(int64_t w, wrap_dim(d, rank));
    if (std::find(dims.begin(), dims.end(), w) != dims.end())
      return invalid("argument 'dim' repeats dimension " + std::to_string(w));
    dims.push_back(w);
  }
  for (int64_t s : sizes)
    if (s == 0)
      return invalid("argument 'self' is empty (shape " + shape_string(sizes) +
                     "); the FFT needs at least one element");
  return dims;
}

/// ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product of
/// the transformed (two-sided) sizes.
inline Result<double> fft_norm_scale(int64_t normalization, std::span<const int64_t> sizes,
                                     std::span<const int64_t> dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(sizes[static_cast<size_t>(d)]);
  switch (normalization) {
    case 0:
      return 1.0;
    case 1:
      return 1.0 / std::sqrt(n);
    case 2:
      return 1.0 / n;
    default:
      return invalid("argument 'normalization' is " + std::to_string(normalization) +
                     ", expected 0 (none), 1 (1/sqrt(n)) or 2 (1/n)");
  }
}

}  // namespace kiln::aoti
