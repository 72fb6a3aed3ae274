// Runtime: the context modules run in. It owns the registries of what this
// build of Kiln can do (devices, execution backends, importers of foreign
// package formats such as PyTorch's .pt2) and the settings
// (docs/settings.md: one table, each setting with a type, a default and a
// line of documentation; the environment variable KILN_<NAME> overrides).
//
//   auto runtime = kiln::Runtime::create({{"require_signature", true}});
//   if (!runtime.ok()) { ... kiln::last_error_message() ... }
//   kiln::Module module(*runtime, "model.kiln");
//
// A Module made without one uses Runtime::default_runtime(). Modules keep
// their runtime alive (shared ownership). Devices themselves are process
// resources (one CUDA plugin, one allocator per GPU) shared by all runtimes;
// a runtime decides which of them its modules may use.
// Thread safety: every member may be called from any thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/setting_value.h"

namespace kiln {

using SettingMap = std::map<std::string, SettingValue, std::less<>>;

class KILN_API Runtime {
 public:
  /// A runtime with every device, backend and importer of this build and
  /// `settings` applied in order. InvalidArgument naming the culprit when a
  /// setting is unknown or mistyped or a KILN_* environment variable does not
  /// parse; InvalidState when the environment fixes a setting given here.
  static Result<std::shared_ptr<Runtime>> create(const SettingMap& settings = {});

  /// The process's default runtime (created on first use with default
  /// settings). Never null. When the environment holds a KILN_* variable that
  /// does not parse, every module of it fails to load, naming the variable.
  static std::shared_ptr<Runtime> default_runtime();

  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Sets a setting. A process-scope setting (log level, CUDA plugin, host
  /// memory, library paths: docs/settings.md) changes it for the whole
  /// process; a runtime-scope one (signature policy, disable_cuda) for this
  /// runtime's modules, taking effect at their next load. InvalidArgument for
  /// an unknown name or a value of the wrong type; InvalidState when the
  /// environment fixes the setting (KILN_<NAME> is set).
  Error set(std::string_view name, const SettingValue& value);
  /// The setting's current value (typed: bool, int, or string for string and
  /// choice settings). NotFound for an unknown name.
  Result<SettingValue> get(std::string_view name) const;

  /// Kiln's own state behind this runtime (src/runtime/runtime_state.h). Not
  /// part of the API: its layout may change in any release.
  struct State;
  State& state() const noexcept { return *state_; }
  explicit Runtime(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

}  // namespace kiln
