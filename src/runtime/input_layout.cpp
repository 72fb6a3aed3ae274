#include "runtime/input_layout.h"

#include <cstdint>

namespace kiln {
namespace {
// The dimension at position `k` (0: outermost) of the order.
size_t dim_at(std::span<const uint8_t> dim_order, size_t k) noexcept {
  return dim_order.empty() ? k : dim_order[k];
}
}  // namespace

std::vector<int64_t> dense_strides(std::span<const int64_t> sizes, std::span<const uint8_t> dim_order) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    const size_t d = dim_at(dim_order, k);
    strides[d] = stride;
    // Saturates instead of overflowing: the product can only exceed int64
    // when another dimension is 0 (an empty tensor, whose strides address
    // nothing) or the tensor could not exist, which allocating it reports.
    if (__builtin_mul_overflow(stride, sizes[d] > 1 ? sizes[d] : 1, &stride)) stride = INT64_MAX;
  }
  return strides;
}

bool has_dense_layout(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                      std::span<const uint8_t> dim_order) noexcept {
  if (sizes.size() != strides.size() || (!dim_order.empty() && dim_order.size() != sizes.size()))
    return false;
  for (int64_t size : sizes)
    if (size == 0) return true;
  int64_t expected = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    const size_t d = dim_at(dim_order, k);
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    // Cannot overflow for a tensor that passed validate_inputs (its extent
    // fits in int64); the check keeps any other caller well defined.
    if (__builtin_mul_overflow(expected, sizes[d], &expected)) return false;
  }
  return true;
}

bool has_exact_dense_strides(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                             std::span<const uint8_t> dim_order) noexcept {
  if (sizes.size() != strides.size() || (!dim_order.empty() && dim_order.size() != sizes.size())) return false;
  int64_t expected = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    const size_t d = dim_at(dim_order, k);
    if (strides[d] != expected) return false;
    if (__builtin_mul_overflow(expected, sizes[d] > 1 ? sizes[d] : 1, &expected)) return false;
  }
  return true;
}

Result<Tensor> host_copy_in_layout(const Tensor& input, std::span<const uint8_t> dim_order) {
  if (!input.device().is_cpu())
    return set_error(Error::InvalidArgument,
                     "host_copy_in_layout: " + input.describe() + " is not on the host");
  const std::vector<int64_t> strides = dense_strides(input.sizes(), dim_order);
  KILN_ASSIGN_OR_RETURN(Tensor copy, Tensor::empty_strided(input.sizes(), strides, input.dtype()));
  KILN_RETURN_IF_ERROR(copy_tensor(copy, input));
  return copy;
}

bool is_row_major_order(std::span<const uint8_t> dim_order) noexcept {
  for (size_t k = 0; k < dim_order.size(); ++k)
    if (dim_order[k] != k) return false;
  return true;
}

std::string describe_dim_order(std::span<const uint8_t> dim_order) {
  if (is_row_major_order(dim_order)) return "row-major";
  std::string listed;
  for (uint8_t d : dim_order) listed += (listed.empty() ? "" : ", ") + std::to_string(d);
  const size_t rank = dim_order.size();
  // torch's channels_last / channels_last_3d: channels innermost, then the
  // spatial dims in order, batch outermost.
  bool channels_last = rank == 4 || rank == 5;
  for (size_t k = 0; channels_last && k < rank; ++k)
    channels_last = dim_order[k] == (k == 0 ? 0 : k == rank - 1 ? 1 : k + 1);
  return (channels_last ? std::string(rank == 4 ? "channels_last" : "channels_last_3d")
                        : std::string("dim order")) +
         " (" + listed + ")";
}

std::string strides_text(std::span<const int64_t> strides) {
  std::string text = "[";
  for (size_t i = 0; i < strides.size(); ++i) text += (i ? ", " : "") + std::to_string(strides[i]);
  return text + "]";
}

}  // namespace kiln
