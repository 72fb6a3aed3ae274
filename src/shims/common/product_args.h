// The shape rules of the matrix products that add a scaled self (baddbmm,
// addbmm, addmv), checked as every device checks them: the ranks of the
// factors, their inner dimensions, and self broadcasting to the result.
// Dtype and device rules differ between devices and stay with them. The
// messages are the ones the CPU ops have always given (a factor is described
// as a CPU tensor describes itself: dtype, sizes, device), so a model's error
// does not depend on its device.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "shims/common/shim_util.h"

namespace kiln::aoti::product {

/// A factor as the checks see it.
struct Factor {
  DType dtype;
  std::span<const int64_t> sizes;
  Device device;
};

/// "float32[2, 3] cuda:0", as kiln::Tensor::describe words it.
inline std::string describe(const Factor& f) {
  return std::string(dtype_name(f.dtype)) + shape_string(f.sizes) + " " + device_string(f.device);
}

/// baddbmm, addbmm: batch1 (B, n, m) and batch2 (B, m, p).
inline Error batches(const Factor& b1, const Factor& b2) {
  if (b1.sizes.size() != 3) return invalid("argument 'batch1' must be 3-d, got " + describe(b1));
  if (b2.sizes.size() != 3) return invalid("argument 'batch2' must be 3-d, got " + describe(b2));
  if (b1.sizes[0] != b2.sizes[0] || b1.sizes[2] != b2.sizes[1])
    return invalid("shape mismatch: batch1 " + shape_string(b1.sizes) + " @ batch2 " +
                   shape_string(b2.sizes));
  return Error::Ok;
}

/// addmv: mat (n, m) and vec (m,).
inline Error matrix_vector(const Factor& mat, const Factor& vec) {
  if (mat.sizes.size() != 2) return invalid("argument 'mat' must be 2-d, got " + describe(mat));
  if (vec.sizes.size() != 1) return invalid("argument 'vec' must be 1-d, got " + describe(vec));
  if (mat.sizes[1] != vec.sizes[0])
    return invalid("shape mismatch: mat " + shape_string(mat.sizes) + " @ vec " + shape_string(vec.sizes));
  return Error::Ok;
}

/// Error unless argument `name` of shape `from` broadcasts to `to` (aligned at
/// the last dimension; each of its dimensions equal or 1).
inline Error broadcasts_to(std::span<const int64_t> from, std::span<const int64_t> to, const char* name) {
  bool ok = from.size() <= to.size();
  for (size_t i = 0; ok && i < from.size(); ++i) {
    const int64_t want = to[to.size() - from.size() + i];
    ok = from[i] == want || from[i] == 1;
  }
  if (!ok)
    return invalid(std::string("argument '") + name + "' " + shape_string(from) + " does not broadcast to " +
                   shape_string(to));
  return Error::Ok;
}

}  // namespace kiln::aoti::product
