// Kiln's settings: one typed table (name, type, default, scope, one-line doc)
// and the values a process or a Runtime holds for it.
//
// Every knob Kiln reads lives in kSettingTable (settings.cpp); nothing else in
// Kiln reads the environment. A value comes from, in order of precedence:
//   1. the environment variable KILN_<NAME> (read by the process once, at
//      its first use of a setting, and by each Runtime when it is created;
//      parsed by parse_setting), which fixes the value: set() refuses to change it, so
//      a deployment can pin a policy (KILN_REQUIRE_SIGNATURE=1) that code
//      cannot lift;
//   2. set() (Runtime::set in C++, kiln_runtime_set_* in C, Runtime.set in
//      Python);
//   3. the table's default.
// Scope: a process setting configures something the process has once (the
// log, host memory, the CUDA plugin and the libraries it opens) and lives in
// process_settings(); a runtime setting belongs to one kiln::Runtime and
// applies to the modules loaded through it.
// docs/settings.md is generated from the table (`kiln settings --markdown`).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/setting_value.h"

namespace kiln {

/// Index of each setting in kSettingTable.
enum class SettingId : uint8_t {
  LogLevel,
  RequireSignature,
  TrustedKeys,
  DisableCuda,
  CudaPlugin,
  CudaAllowTf32,
  CudaUploadWorkers,
  CublasltLibrary,
  CudnnLibrary,
  CufftLibrary,
  CusolverLibrary,
  CublasLibrary,
  CpuBlockCacheBytes,
  CpuPackWeights,
  PoisonAllocations,
  BlasLibrary,
  SleefLibrary,
  DisableMemfd,
  kCount,
};
inline constexpr size_t kSettingCount = static_cast<size_t>(SettingId::kCount);

/// Choice: one word out of SettingInfo::choices, held as its index.
enum class SettingType : uint8_t { Bool, Int, String, Choice };
enum class SettingScope : uint8_t { Process, Runtime };

struct SettingInfo {
  SettingId id;
  std::string_view name;     ///< "cuda_allow_tf32"; its variable is KILN_CUDA_ALLOW_TF32
  SettingType type;
  SettingScope scope;
  std::string_view fallback; ///< the default, as text parse_setting accepts
  std::string_view choices;  ///< Choice only: the words, '|'-separated, in index order
  std::string_view doc;      ///< one line
};

/// The table, in SettingId order.
KILN_API std::span<const SettingInfo> setting_table() noexcept;
/// The entry called `name`, or nullptr.
KILN_API const SettingInfo* find_setting(std::string_view name) noexcept;
KILN_API const SettingInfo& setting_info(SettingId id) noexcept;
/// "KILN_" + the name in upper case.
KILN_API std::string setting_environment_variable(const SettingInfo& info);
/// "bool", "int", "string" or the choices ("debug|info|...").
KILN_API std::string setting_type_name(const SettingInfo& info);

/// The one parser of setting text (environment values, defaults, the CLI):
/// bool 1/true/on/yes or 0/false/off/no (any case); int a decimal integer
/// >= 0; string as it is; choice one of the words. InvalidArgument naming the
/// setting and what it takes otherwise.
KILN_API Result<SettingValue> parse_setting(const SettingInfo& info, std::string_view text);
/// A value as text parse_setting reads back.
KILN_API std::string format_setting(const SettingInfo& info, const SettingValue& value);

/// Values of every setting. Reads of bool, int and choice settings are
/// lock-free (they sit on hot paths: the log level, TF32); strings take a
/// mutex. Thread-safe.
class KILN_API Settings {
 public:
  /// Defaults, with the environment's values on top, read here: once for the
  /// process's settings, at its creation for a Runtime's.
  Settings();
  Settings(const Settings&) = delete;
  Settings& operator=(const Settings&) = delete;

  /// InvalidArgument for a value of the wrong type (an int where a bool is
  /// wanted; text is parsed for any type) or an unknown choice; InvalidState
  /// when the environment fixes the setting.
  Error set(SettingId id, const SettingValue& value);
  SettingValue get(SettingId id) const;

  bool get_bool(SettingId id) const noexcept;
  int64_t get_int(SettingId id) const noexcept;  ///< Int, or a Choice's index
  std::string get_string(SettingId id) const;
  /// Whether the environment gave this setting its value.
  bool from_environment(SettingId id) const noexcept { return !pinned_[index(id)].empty(); }
  /// One message per environment variable that did not parse (its setting
  /// keeps the default). A Runtime refuses to work while there is one.
  const std::vector<std::string>& environment_errors() const noexcept { return environment_errors_; }

 private:
  static size_t index(SettingId id) noexcept { return static_cast<size_t>(id); }
  Error store(SettingId id, const SettingValue& value);

  std::array<std::atomic<int64_t>, kSettingCount> numbers_{};  // bool / int / choice values
  std::array<std::string, kSettingCount> strings_;             // string values, under mutex_
  std::array<std::string, kSettingCount> pinned_;              // "KILN_X=value" where the environment set it
  std::vector<std::string> environment_errors_;
  mutable std::mutex mutex_;
};

/// The process's settings: read from the environment on first use. Holds the
/// values of process-scope settings (runtime-scope ones live in each Runtime).
KILN_API Settings& process_settings();

}  // namespace kiln
