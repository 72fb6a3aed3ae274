// libFuzzer target for execute-time input validation: decodes a method
// contract and a list of tensors (any dtype code, device, sizes, strides,
// storage offset and storage size) from the bytes and validates them. It must
// never crash or trip ASan/UBSan; when it accepts, the tensors must really fit
// their storage, which is re-checked here independently.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kiln::fuzz::ValidationCase c = kiln::fuzz::decode_validation_case({data, size});
  static char fake_memory;
  std::vector<kiln::Tensor> inputs;
  for (const auto& t : c.tensors) inputs.push_back(kiln::fuzz::make_tensor(t, &fake_memory));
  const kiln::Error err = kiln::validate_inputs(c.method, inputs);
  if (err == kiln::Error::Ok) {
    for (const kiln::Tensor& t : inputs)
      if (!fits_storage(t)) std::abort();  // accepted a tensor that reaches outside its storage
  } else if (kiln::last_error_message().empty()) {
    std::abort();  // every refusal must say why
  }
  return 0;
}
