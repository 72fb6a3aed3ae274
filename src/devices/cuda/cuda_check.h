// Turning CUDA runtime status codes into kiln::Error with a message that names
// the call that failed and why. Internal to libkiln_cuda.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kiln/error.h"

namespace kiln::cudadev {

/// Ok for cudaSuccess; otherwise records "<what>: <cuda error name>: <text>"
/// and returns `code` (BackendFailed unless the caller says otherwise;
/// cudaErrorMemoryAllocation always maps to OutOfMemory).
inline Error cuda_status(cudaError_t status, const std::string& what, Error code = Error::BackendFailed) {
  if (status == cudaSuccess) return Error::Ok;
  if (status == cudaErrorMemoryAllocation) code = Error::OutOfMemory;
  // Clear the sticky "last error" of non-fatal failures so a later unrelated
  // cudaGetLastError (the model library checks it after launches) is not
  // blamed for this one.
  (void)cudaGetLastError();
  return set_error(code, what + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace kiln::cudadev

/// Returns from the enclosing function (which returns kiln::Error or a Result)
/// if the CUDA call `expr` fails; the message names the call's source text.
#define KILN_CUDA_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                      \
    const cudaError_t kiln_cuda_status__ = (expr);                                          \
    if (kiln_cuda_status__ != cudaSuccess)                                                  \
      return ::kiln::cudadev::cuda_status(kiln_cuda_status__, #expr);                       \
  } while (0)
