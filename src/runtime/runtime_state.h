// What a kiln::Runtime holds: its settings and its registries of devices,
// backends and program importers. The registries start empty; whoever creates
// a Runtime fills them (src/builtins.cpp lists what this build has), so
// nothing in this layer knows or reaches the code above it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_interface.h"
#include "core/settings.h"
#include "kiln/program_file.h"
#include "kiln/runtime.h"
#include "runtime/backend.h"
#include "runtime/program_importer.h"

namespace kiln {

/// Loads a device on first use: the device, or nullptr with the reason in
/// `*unavailable` (the CUDA plugin, its libraries or a GPU missing).
using DeviceLoader = std::function<DeviceInterface*(std::string* unavailable)>;

struct Runtime::State {
  /// Values of this runtime's settings: the defaults, with the environment
  /// as it is when the runtime is created on top. Process-scope ones are
  /// read from and written to process_settings() instead.
  Settings settings;

  /// Registration (before the Runtime is shared). Registered objects are not
  /// owned: they are static objects of this build.
  void add_backend(Backend* backend) { backends_.push_back(backend); }
  void add_importer(const ProgramImporter* importer) { importers_.push_back(importer); }
  void add_device(DeviceType type, DeviceLoader loader);

  /// The backend called `name`, or nullptr.
  Backend* find_backend(std::string_view name) const;
  /// Names of every backend (for messages).
  std::string backend_names() const;
  /// The device of `type` this runtime's modules may use: loaded on first
  /// request. NotSupported naming the reason when this build or machine has
  /// none or the settings disable it.
  Result<DeviceInterface*> device(DeviceType type);

  /// Ok, or InvalidArgument listing the KILN_* variables that did not parse:
  /// nothing runs under settings other than those the environment asked for.
  Error check_environment() const;

  /// A `.kiln` program, or a file one of the importers recognises by its
  /// first bytes, converted. InvalidArgument when `data_files` are given for
  /// an imported file.
  Result<std::shared_ptr<const ProgramFile>> open_program(const std::string& path,
                                                          const std::vector<std::string>& data_files) const;

  /// A setting's value, from process_settings() or this runtime by its scope.
  const Settings& settings_for(SettingId id) const;

 private:
  struct DeviceSlot {
    DeviceType type;
    DeviceLoader loader;
    std::once_flag once;
    DeviceInterface* device = nullptr;
    std::string unavailable;
  };
  std::vector<Backend*> backends_;
  std::vector<const ProgramImporter*> importers_;
  std::vector<std::unique_ptr<DeviceSlot>> devices_;
};

}  // namespace kiln
