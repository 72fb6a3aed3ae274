#include "errors.h"

namespace kiln::triton {

namespace {

// Kiln's statuses grouped the way Triton's clients tell errors apart: the
// caller's fault, something missing, something this build or device cannot do,
// a resource that may come back, and everything else.
TRITONSERVER_Error_Code triton_code(kiln_status_t status) {
  switch (status) {
    case KILN_ERROR_INVALID_ARGUMENT: return TRITONSERVER_ERROR_INVALID_ARG;
    case KILN_ERROR_NOT_FOUND: return TRITONSERVER_ERROR_NOT_FOUND;
    case KILN_ERROR_NOT_SUPPORTED:
    case KILN_ERROR_MISSING_SHIM: return TRITONSERVER_ERROR_UNSUPPORTED;
    case KILN_ERROR_OUT_OF_MEMORY: return TRITONSERVER_ERROR_UNAVAILABLE;
    default: return TRITONSERVER_ERROR_INTERNAL;
  }
}

}  // namespace

TRITONSERVER_Error* kiln_error(kiln_status_t status, const std::string& what) {
  std::string message = what + ": kiln " + kiln_status_name(status) + ": " + kiln_last_error_message();
  return TRITONSERVER_ErrorNew(triton_code(status), message.c_str());
}

TRITONSERVER_Error* error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

void log(TRITONSERVER_LogLevel level, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  TRITONSERVER_Error* err = TRITONSERVER_LogMessage(level, __FILE__, __LINE__, message.c_str());
  if (err != nullptr) TRITONSERVER_ErrorDelete(err);
}

}  // namespace kiln::triton
