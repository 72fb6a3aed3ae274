#include "shims/common/tensor_handle.h"

#include <new>

namespace kiln::aoti {

AtenTensorHandle new_handle(Tensor tensor) {
  auto* heap = new (std::nothrow) Tensor(std::move(tensor));
  return reinterpret_cast<AtenTensorHandle>(heap);
}

Tensor* from_handle(AtenTensorHandle handle) { return reinterpret_cast<Tensor*>(handle); }

void delete_handle(AtenTensorHandle handle) noexcept { delete reinterpret_cast<Tensor*>(handle); }

namespace {
thread_local NewHandleCapture* t_capture = nullptr;
}  // namespace

NewHandleCapture::NewHandleCapture() noexcept : previous_(t_capture) { t_capture = this; }

NewHandleCapture::~NewHandleCapture() { t_capture = previous_; }

void NewHandleCapture::note(AtenTensorHandle handle) noexcept {
  if (t_capture == nullptr || handle == nullptr) return;
  try {
    t_capture->handles_.push_back(handle);
  } catch (...) {
    // Out of memory: this handle is not released with the method (a small leak).
  }
}

}  // namespace kiln::aoti
