#include "kiln/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace kiln {
namespace {
LogLevel level_from_env() {
  const char* env = std::getenv("KILN_LOG_LEVEL");
  if (!env) return LogLevel::Warning;
  std::string value(env);
  if (value == "debug") return LogLevel::Debug;
  if (value == "info") return LogLevel::Info;
  if (value == "error") return LogLevel::Error;
  if (value == "off") return LogLevel::Off;
  return LogLevel::Warning;
}
std::atomic<int>& level_slot() {
  static std::atomic<int> level{static_cast<int>(level_from_env())};
  return level;
}
}  // namespace

void set_log_level(LogLevel level) noexcept { level_slot().store(static_cast<int>(level)); }
LogLevel log_level() noexcept { return static_cast<LogLevel>(level_slot().load()); }

void log_message(LogLevel level, std::string_view message) {
  static const char* const kNames[] = {"debug", "info", "warning", "error", "off"};
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "[kiln %s] %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace kiln
