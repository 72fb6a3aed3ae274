// Argument checks shared by the CPU fallback ops.
#pragma once

#include <string>

#include "shims/common/shim_util.h"

namespace kiln::cpu {

/// The defined CPU tensor behind `handle`, or an error naming argument `name`.
inline Result<Tensor*> cpu_tensor_arg(AtenTensorHandle handle, const char* name) {
  KILN_ASSIGN_OR_RETURN(Tensor * t, aoti::tensor_arg(handle, name));
  if (!t->device().is_cpu())
    return aoti::invalid(std::string("argument '") + name + "' is on " + device_string(t->device()) +
                         ", expected cpu");
  return t;
}

/// Error unless `t` has dtype `dtype`.
inline Error same_dtype(const Tensor& t, DType dtype, const char* name) {
  if (t.dtype() != dtype)
    return aoti::invalid(std::string("argument '") + name + "' has dtype " + dtype_name(t.dtype()) + ", expected " +
                         dtype_name(dtype));
  return Error::Ok;
}

}  // namespace kiln::cpu
