// AtenTensorHandle <-> kiln::Tensor. A handle is a heap-allocated kiln::Tensor
// (one view: sizes, strides, offset and a strong reference to its Storage), so
// deleting a handle never frees memory another view still uses.
#pragma once

#include "aoti/shim/shim_abi.h"
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

}  // namespace kiln::aoti
