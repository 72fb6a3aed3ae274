#include "kiln/log.h"

#include <cstdio>
#include <iterator>
#include <mutex>

#include "core/settings.h"

namespace kiln {

namespace {
// Indexed by LogLevel, in the order of setting log_level's choices (whose
// index is the level).
constexpr const char* kNames[] = {"debug", "info", "warning", "error", "off"};
static_assert(std::size(kNames) == static_cast<size_t>(LogLevel::Off) + 1);
}  // namespace

void set_log_level(LogLevel level) noexcept {
  try {
    (void)process_settings().set(SettingId::LogLevel, std::string(kNames[static_cast<int>(level)]));
  } catch (...) {
    // Out of memory for the string: the level stays as it was.
  }
}

LogLevel log_level() noexcept { return static_cast<LogLevel>(process_settings().get_int(SettingId::LogLevel)); }

void log_message(LogLevel level, std::string_view message) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[kiln %s] %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace kiln
