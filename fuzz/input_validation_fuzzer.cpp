// libFuzzer target for execute-time input validation and layout: decodes a
// method contract (with each input's compiled layout, its dim order) and a
// list of tensors (any dtype code, device, sizes, strides, storage offset and
// storage size) from the bytes and validates them. It must never crash or
// trip ASan/UBSan; when it accepts, the tensors must really fit their
// storage, which is re-checked here independently. Then, for every accepted
// tensor, what execute does next is checked too:
//   - one the layout helper would pass to the compiled code as it is (already
//     dense in its dim order) must hold all its elements, read densely, inside
//     its storage: the kernels read it that way;
//   - a CPU one (of bounded size) is really copied into its compiled layout,
//     from a buffer of exactly its storage size (ASan catches a read past it),
//     and the copy must hold the view's values, dense in that layout.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/input_layout.h"
#include "runtime/input_validation.h"
#include "validation_case.h"

namespace {

// Independent bound check of an accepted tensor, in 128-bit arithmetic so it
// cannot overflow itself: the last byte reached must lie inside the storage.
bool fits_storage(const kiln::Tensor& t) {
  const size_t elem = kiln::element_size(t.dtype());
  if (elem == 0) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) < 0 || t.stride(d) < 0) return false;
  __int128 last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return true;  // reaches no memory
    last += static_cast<__int128>(t.size(d) - 1) * t.stride(d);
  }
  if (t.storage_offset() < 0) return false;
  const __int128 end = (static_cast<__int128>(t.storage_offset()) + last + 1) * static_cast<__int128>(elem);
  return end <= static_cast<__int128>(t.storage()->nbytes());
}

// Elements of the view, in 128 bits (0 when empty).
__int128 element_count(const kiln::Tensor& t) {
  __int128 n = 1;
  for (int64_t s : t.sizes()) n *= s;
  return n;
}

// A tensor passed on without a copy is read as numel() dense elements from
// its first one: they must all lie inside the storage.
bool dense_read_fits_storage(const kiln::Tensor& t) {
  const __int128 n = element_count(t);
  if (n == 0) return true;
  const __int128 elem = static_cast<__int128>(kiln::element_size(t.dtype()));
  return (static_cast<__int128>(t.storage_offset()) + n) * elem <=
         static_cast<__int128>(t.storage()->nbytes());
}

constexpr uint64_t kMaxCopiedStorageBytes = uint64_t{1} << 20;
constexpr __int128 kMaxCopiedElements = __int128{1} << 16;

// Copies `fake` (its geometry, over real memory of exactly its storage size)
// into `dim_order` on the host and compares every element.
void check_host_copy(const kiln::Tensor& fake, std::span<const uint8_t> dim_order) {
  const size_t bytes = fake.storage()->nbytes();
  std::unique_ptr<uint8_t[]> memory(new uint8_t[bytes > 0 ? bytes : 1]);
  for (size_t i = 0; i < bytes; ++i) memory[i] = static_cast<uint8_t>(i * 131 + 7);
  const kiln::Tensor real(kiln::Storage::create(memory.get(), bytes, kiln::Device{}), fake.dtype(),
                          fake.sizes(), fake.strides(), fake.storage_offset());
  auto copy = kiln::host_copy_in_layout(real, dim_order);
  if (!copy.ok()) {
    if (kiln::last_error_message().empty()) std::abort();
    return;  // e.g. out of memory: refused with a reason, nothing read
  }
  if (copy->sizes() != real.sizes() || !kiln::has_dense_layout(copy->sizes(), copy->strides(), dim_order))
    std::abort();  // the copy is not in the layout the kernels read
  const int64_t n = real.numel();
  const size_t elem = kiln::element_size(real.dtype());
  std::vector<int64_t> index(static_cast<size_t>(real.dim()), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t src = 0, dst = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      src += index[d] * real.strides()[d];
      dst += index[d] * copy->strides()[d];
    }
    if (std::memcmp(static_cast<const uint8_t*>(real.data_ptr()) + src * static_cast<int64_t>(elem),
                    static_cast<const uint8_t*>(copy->data_ptr()) + dst * static_cast<int64_t>(elem),
                    elem) != 0)
      std::abort();  // a value changed on the way
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < real.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kiln::fuzz::ValidationCase c = kiln::fuzz::decode_validation_case({data, size});
  static char fake_memory;
  std::vector<kiln::Tensor> inputs;
  for (const auto& t : c.tensors) inputs.push_back(kiln::fuzz::make_tensor(t, &fake_memory));
  const kiln::Error err = kiln::validate_inputs(c.method, inputs);
  if (err != kiln::Error::Ok) {
    if (kiln::last_error_message().empty()) std::abort();  // every refusal must say why
    return 0;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const kiln::Tensor& t = inputs[i];
    if (!fits_storage(t)) std::abort();  // accepted a tensor that reaches outside its storage
    const std::vector<uint8_t>& order = c.method.inputs[i].dim_order;
    if (kiln::has_dense_layout(t.sizes(), t.strides(), order) && !dense_read_fits_storage(t))
      std::abort();  // would be handed to the kernels as it is and read past its storage
    if (t.device().is_cpu() && t.storage()->nbytes() <= kMaxCopiedStorageBytes &&
        element_count(t) <= kMaxCopiedElements)
      check_host_copy(t, order);
  }
  return 0;
}
