#include "kiln/error.h"

namespace kiln {
namespace {
std::string& thread_message() {
  thread_local std::string message;
  return message;
}
}  // namespace

const char* to_string(Error error) noexcept {
  switch (error) {
    case Error::Ok: return "Ok";
    case Error::Internal: return "Internal";
    case Error::InvalidArgument: return "InvalidArgument";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::NotFound: return "NotFound";
    case Error::NotSupported: return "NotSupported";
    case Error::OutOfMemory: return "OutOfMemory";
    case Error::IoError: return "IoError";
    case Error::BackendFailed: return "BackendFailed";
    case Error::InvalidState: return "InvalidState";
    case Error::MissingShim: return "MissingShim";
    case Error::IntegrityError: return "IntegrityError";
  }
  return "Unknown";
}

Error set_error(Error error, std::string message) {
  thread_message() = std::move(message);
  return error;
}

const std::string& last_error_message() noexcept { return thread_message(); }

void clear_error() noexcept { thread_message().clear(); }

}  // namespace kiln
