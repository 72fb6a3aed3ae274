// Turning Kiln's failures into Triton errors, and logging through the server.
#pragma once

#include <string>

#include "kiln/c_api.h"
#include "triton_api.h"

namespace kiln::triton {

// A Triton error for a failed Kiln call: Kiln's status name and the message of
// kiln_last_error_message() (read on the calling thread, so call this right
// after the failure), after `what` the backend was doing. This text is what the
// client sees.
TRITONSERVER_Error* kiln_error(kiln_status_t status, const std::string& what);

// A Triton error of `code` with `message`.
TRITONSERVER_Error* error(TRITONSERVER_Error_Code code, const std::string& message);

// Logs through the server's log, which honours --log-verbose and friends.
void log(TRITONSERVER_LogLevel level, const std::string& message);

}  // namespace kiln::triton

// Returns a non-null TRITONSERVER_Error* from the enclosing function.
#define KILN_TRITON_RETURN_IF_ERROR(expr)   \
  do {                                      \
    TRITONSERVER_Error* kiln_err_ = (expr); \
    if (kiln_err_ != nullptr) return kiln_err_; \
  } while (0)

// Runs a Kiln C call; on failure returns kiln_error(status, what).
#define KILN_TRITON_CALL(expr, what)                                     \
  do {                                                                   \
    kiln_status_t kiln_status_ = (expr);                                 \
    if (kiln_status_ != KILN_OK) return ::kiln::triton::kiln_error(kiln_status_, (what)); \
  } while (0)
