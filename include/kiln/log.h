// Levelled logging to stderr. The level is setting log_level
// (docs/settings.md: debug, info, warning, error, off; default warning), set
// here, through a Runtime, or by the environment (KILN_LOG_LEVEL, which then
// fixes it: set_log_level does nothing). Thread-safe.
#pragma once

#include <string_view>

#include "kiln/export.h"

namespace kiln {

enum class LogLevel : int { Debug = 0, Info = 1, Warning = 2, Error = 3, Off = 4 };

KILN_API void set_log_level(LogLevel level) noexcept;
KILN_API LogLevel log_level() noexcept;
KILN_API void log_message(LogLevel level, std::string_view message);

}  // namespace kiln

#define KILN_LOG(level, message)                                               \
  do {                                                                         \
    if (::kiln::LogLevel::level >= ::kiln::log_level())                        \
      ::kiln::log_message(::kiln::LogLevel::level, (message));                 \
  } while (0)
