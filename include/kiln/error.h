// Error codes and the Result<T> value-or-error type used across Kiln.
//
// Kiln never throws across its public surface: every fallible call returns an
// Error or a Result<T>. The human-readable detail of the most recent failure on
// the calling thread is kept in a thread-local message (see last_error_message),
// so codes stay small while messages can name the exact input, key or byte
// offset that was wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "kiln/export.h"

namespace kiln {

/// Error codes. Values are part of the C ABI (kiln_status_t) and never change.
enum class Error : int32_t {
  Ok = 0,
  Internal = 1,          ///< A bug in Kiln, or a broken invariant.
  InvalidArgument = 2,   ///< A caller-supplied value is wrong (shape, dtype, option, ...).
  InvalidProgram = 3,    ///< A program file is corrupt, truncated or malformed.
  NotFound = 4,          ///< A named method, key, file or symbol does not exist.
  NotSupported = 5,      ///< Valid request that this build/device cannot do.
  OutOfMemory = 6,       ///< An allocation failed.
  IoError = 7,           ///< The OS refused a file/memory-mapping operation.
  BackendFailed = 8,     ///< The compiled model library or a device library reported failure.
  InvalidState = 9,      ///< Call made in the wrong order (e.g. execute before load).
  MissingShim = 10,      ///< A model library imports an aoti_torch_* function Kiln lacks.
  IntegrityError = 11,   ///< A digest or signature does not match.
};

/// Stable short name of an error code ("InvalidArgument").
KILN_API const char* to_string(Error error) noexcept;

/// Records `message` as the calling thread's last error detail and returns `error`.
/// Use it at the point where the failure is detected; callers up the stack just
/// forward the code.
KILN_API Error set_error(Error error, std::string message);

/// The detail recorded by the most recent set_error on this thread ("" if none).
/// The reference is valid until the next Kiln call on this thread.
KILN_API const std::string& last_error_message() noexcept;

/// Clears this thread's last error detail.
KILN_API void clear_error() noexcept;

/// A value of type T or an Error (never Ok). Move-only semantics are not imposed;
/// copying a Result copies the value.
template <typename T>
class [[nodiscard]] Result {
 public:
  /* implicit */ Result(T value) : state_(std::move(value)) {}
  /* implicit */ Result(Error error) : state_(error == Error::Ok ? Error::Internal : error) {}

  bool ok() const noexcept { return std::holds_alternative<T>(state_); }
  explicit operator bool() const noexcept { return ok(); }
  Error error() const noexcept { return ok() ? Error::Ok : std::get<Error>(state_); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> state_;
};

}  // namespace kiln

/// Returns the error from the enclosing function if `expr` (an Error) is not Ok.
#define KILN_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    ::kiln::Error kiln_err__ = (expr);                   \
    if (kiln_err__ != ::kiln::Error::Ok) return kiln_err__; \
  } while (0)

#define KILN_CONCAT_INNER__(a, b) a##b
#define KILN_CONCAT__(a, b) KILN_CONCAT_INNER__(a, b)

/// `KILN_ASSIGN_OR_RETURN(auto x, make_result());` unwraps a Result or returns its error.
#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL__(KILN_CONCAT__(kiln_res__, __LINE__), lhs, expr)
#define KILN_ASSIGN_OR_RETURN_IMPL__(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.error();                 \
  lhs = std::move(tmp).value()

/// Records a formatted-by-caller message and returns `code` if `cond` is false.
#define KILN_CHECK_OR_RETURN(cond, code, message)          \
  do {                                                     \
    if (!(cond)) return ::kiln::set_error((code), (message)); \
  } while (0)
