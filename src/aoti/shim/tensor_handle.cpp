#include "aoti/shim/tensor_handle.h"

#include <new>

namespace kiln::aoti {

AtenTensorHandle new_handle(Tensor tensor) {
  auto* heap = new (std::nothrow) Tensor(std::move(tensor));
  return reinterpret_cast<AtenTensorHandle>(heap);
}

Tensor* from_handle(AtenTensorHandle handle) { return reinterpret_cast<Tensor*>(handle); }

void delete_handle(AtenTensorHandle handle) noexcept { delete reinterpret_cast<Tensor*>(handle); }

}  // namespace kiln::aoti
