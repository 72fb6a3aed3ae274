// Small tensor helpers the CLI needs around a Module call: moving tensors
// between devices in contiguous layout and widening any dtype to float32 (for
// printing statistics and for writing types numpy lacks).
//
// Ownership: results own fresh memory. Thread-safe (no shared state).
#pragma once

#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::tools {

/// A contiguous copy of `tensor` on `device` (any source strides/device).
Result<Tensor> contiguous_copy(const Tensor& tensor, Device device);

/// A contiguous CPU float32 copy of `tensor`, element by element (bool -> 0/1,
/// integers rounded to nearest float). Works for every Kiln dtype.
Result<Tensor> to_float32(const Tensor& tensor);

}  // namespace kiln::tools
