// Checks execute() inputs against a method's contract before any backend sees
// them, so a wrong tensor is reported by name instead of crashing a kernel.
#pragma once

#include <span>

#include "kiln/error.h"
#include "kiln/program_file.h"
#include "kiln/tensor.h"

namespace kiln {

/// Ok, or InvalidArgument with a message naming the method, the input (index
/// and name) and what is wrong: count, undefined tensor, dtype, rank, a static
/// dim, a dynamic dim outside its bounds, device, or memory outside its storage.
Error validate_inputs(const MethodInfo& method, std::span<const Tensor> inputs);

}  // namespace kiln
