// AtenTensorHandle <-> kiln::Tensor. A handle is a heap-allocated kiln::Tensor
// (one view: sizes, strides, offset and a strong reference to its Storage), so
// deleting a handle never frees memory another view still uses.
#pragma once

#include <vector>

#include "shims/common/shim_abi.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

/// Moves `tensor` into a new heap handle; the receiver owns it (free with
/// delete_handle or aoti_torch_delete_tensor_object). Returns nullptr only if
/// allocation fails. Thread-safe.
AtenTensorHandle new_handle(Tensor tensor);

/// The tensor behind `handle`, borrowed (valid until the handle is deleted);
/// nullptr stays nullptr.
Tensor* from_handle(AtenTensorHandle handle);

/// Frees a handle from new_handle; nullptr is a no-op.
void delete_handle(AtenTensorHandle handle) noexcept;

/// While one lives on a thread, the handles aoti_torch_new_tensor_handle makes
/// on that thread are recorded in it as well. Why: a model container given
/// user-managed constants keeps a new handle to each (MaybeOwningAtenTensorHandle
/// in AOTInductor's runtime) and never deletes it, which would keep the
/// weights' storage alive after the method is gone. The method captures those
/// handles and deletes them after the container. Scopes nest; not copyable.
class NewHandleCapture {
 public:
  NewHandleCapture() noexcept;
  ~NewHandleCapture();
  NewHandleCapture(const NewHandleCapture&) = delete;
  NewHandleCapture& operator=(const NewHandleCapture&) = delete;

  /// The handles recorded so far; the capture forgets them.
  std::vector<AtenTensorHandle> take() noexcept { return std::move(handles_); }

  /// Called by aoti_torch_new_tensor_handle for each handle it makes.
  static void note(AtenTensorHandle handle) noexcept;

 private:
  std::vector<AtenTensorHandle> handles_;
  NewHandleCapture* previous_;
};

}  // namespace kiln::aoti
