#include "shims/common/pad_args.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "shims/common/shim_util.h"

namespace kiln::aoti {

namespace {

Result<PadMode> mode_arg(const char* mode) {
  if (mode == nullptr) return invalid("argument 'mode' is null");
  const std::string_view m(mode);
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "replicate") return PadMode::Replicate;
  if (m == "circular") return PadMode::Circular;
  return invalid("Unrecognised padding mode " + std::string(m));
}

std::string amounts_text(int64_t before, int64_t after) {
  return "padding (" + std::to_string(before) + ", " + std::to_string(after) + ")";
}

}  // namespace

Result<PadArgs> pad_args(std::span<const int64_t> sizes, std::span<const int64_t> amounts, const char* mode,
                         const double* value) {
  PadArgs a;
  KILN_ASSIGN_OR_RETURN(a.mode, mode_arg(mode));
  const int64_t nd = static_cast<int64_t>(sizes.size());
  const int64_t np = static_cast<int64_t>(amounts.size());
  if (np % 2 != 0) return invalid("Padding length must be divisible by 2");
  if (np > 2 * nd)
    return invalid(
        "Padding length should be less than or equal to two times the input dimension but got padding length " +
        std::to_string(np) + " and input of dimension " + std::to_string(nd));
  const bool edge_mode = a.mode == PadMode::Reflect || a.mode == PadMode::Replicate;
  if (a.mode != PadMode::Constant) {
    if (value != nullptr && *value != 0.0)
      return invalid("Padding mode \"" + std::string(mode) + "\" doesn't take in value argument");
    if (np == 0 || np > 6 || (nd != np / 2 + 1 && nd != np / 2 + 2))
      return invalid("Padding size " + std::to_string(np) + " is not supported for " + std::to_string(nd) +
                     "D input tensor.");
  }
  if (edge_mode) {
    // The batch dimension (when present) may be 0; the others may not.
    for (int64_t d = nd == np / 2 + 2 ? 1 : 0; d < nd; ++d)
      if (sizes[static_cast<size_t>(d)] == 0)
        return invalid(
            "Expected a tensor with possibly 0 batch size and other non-zero dimensions for input, but got: " +
            shape_string(sizes));
  }
  a.out_sizes.assign(sizes.begin(), sizes.end());
  a.dims.resize(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t n = sizes[static_cast<size_t>(d)];
    a.dims[static_cast<size_t>(d)] = PadDimension{n, 0, 0, 0, n};
  }
  bool all_outputs_empty = true;
  for (int64_t k = 0; k < np / 2; ++k) {
    const int64_t d = nd - 1 - k;
    const int64_t n = sizes[static_cast<size_t>(d)];
    const int64_t before = amounts[static_cast<size_t>(2 * k)], after = amounts[static_cast<size_t>(2 * k + 1)];
    a.crop_only = a.crop_only && before <= 0 && after <= 0;
    int64_t out = 0;
    if (__builtin_add_overflow(n, before, &out) || __builtin_add_overflow(out, after, &out))
      return invalid(amounts_text(before, after) + " overflows the size of dimension " + std::to_string(d));
    const std::string where = " at dimension " + std::to_string(d) + " of input " + shape_string(sizes);
    if (a.mode == PadMode::Reflect && (before >= n || after >= n))
      return invalid("Padding size should be less than the corresponding input dimension, but got: " +
                     amounts_text(before, after) + where);
    // What is left of the dimension after negative amounts crop it.
    const int64_t kept = n + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0);
    if (a.mode == PadMode::Constant && (n + std::min<int64_t>(before, 0) < 0 || kept < 0))
      return invalid(amounts_text(before, after) + " crops more than the size" + where);
    if (a.mode == PadMode::Circular && (before > n || after > n || (out > 0 && (before > kept || after > kept))))
      return invalid("Padding value causes wrapping around more than once" + where);
    if (out < 0) return invalid(amounts_text(before, after) + " gives a negative size" + where);
    all_outputs_empty = all_outputs_empty && out < 1;
    a.out_sizes[static_cast<size_t>(d)] = out;
    a.dims[static_cast<size_t>(d)] = PadDimension{n, before, after, std::max<int64_t>(-before, 0), kept};
  }
  // As ATen's reflection/replication kernels: an empty padded dimension is
  // accepted as long as one of them is not.
  if (edge_mode && all_outputs_empty)
    return invalid("input " + shape_string(sizes) + " is too small: every padded dimension of the output would be empty");
  return a;
}

}  // namespace kiln::aoti
