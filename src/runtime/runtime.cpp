#include "kiln/runtime.h"

#include <algorithm>

#include "program/regular_file.h"
#include "runtime/runtime_state.h"

namespace kiln {

Runtime::Runtime(std::unique_ptr<State> state) : state_(std::move(state)) {}

Runtime::~Runtime() = default;

Error Runtime::set(std::string_view name, const SettingValue& value) {
  const SettingInfo* info = find_setting(name);
  if (!info) return set_error(Error::InvalidArgument, "unknown setting '" + std::string(name) + "' (docs/settings.md)");
  Settings& target = info->scope == SettingScope::Process ? process_settings() : state_->settings;
  return target.set(info->id, value);
}

Result<SettingValue> Runtime::get(std::string_view name) const {
  const SettingInfo* info = find_setting(name);
  if (!info) return set_error(Error::NotFound, "unknown setting '" + std::string(name) + "' (docs/settings.md)");
  return state_->settings_for(info->id).get(info->id);
}

const Settings& Runtime::State::settings_for(SettingId id) const {
  return setting_info(id).scope == SettingScope::Process ? process_settings() : settings;
}

void Runtime::State::add_device(DeviceType type, DeviceLoader loader) {
  auto slot = std::make_unique<DeviceSlot>();
  slot->type = type;
  slot->loader = std::move(loader);
  devices_.push_back(std::move(slot));
}

Backend* Runtime::State::find_backend(std::string_view name) const {
  for (Backend* backend : backends_)
    if (backend->name() == name) return backend;
  return nullptr;
}

std::string Runtime::State::backend_names() const {
  std::string names;
  for (Backend* backend : backends_) names += (names.empty() ? "" : ", ") + std::string(backend->name());
  return names;
}

Result<DeviceInterface*> Runtime::State::device(DeviceType type) {
  if (type == DeviceType::CUDA && settings.get_bool(SettingId::DisableCuda))
    return set_error(Error::NotSupported, "CUDA is disabled by setting 'disable_cuda'" +
                                              std::string(settings.from_environment(SettingId::DisableCuda)
                                                              ? " (KILN_DISABLE_CUDA in the environment)"
                                                              : ""));
  for (const auto& slot : devices_) {
    if (slot->type != type) continue;
    std::call_once(slot->once, [&] { slot->device = slot->loader(&slot->unavailable); });
    if (!slot->device)
      return set_error(Error::NotSupported,
                       std::string(device_type_name(type)) + " device not available: " + slot->unavailable);
    return slot->device;
  }
  return set_error(Error::NotSupported,
                   std::string("this build of Kiln has no ") + device_type_name(type) + " device");
}

Error Runtime::State::check_environment() const {
  std::string problems;
  for (const Settings* s : {static_cast<const Settings*>(&process_settings()), &settings})
    for (const std::string& problem : s->environment_errors())
      if (problems.find(problem) == std::string::npos) problems += (problems.empty() ? "" : "; ") + problem;
  if (problems.empty()) return Error::Ok;
  return set_error(Error::InvalidArgument, "the environment holds settings Kiln cannot read: " + problems);
}

Result<std::shared_ptr<const ProgramFile>> Runtime::State::open_program(
    const std::string& path, const std::vector<std::string>& data_files) const {
  // Opened without blocking and type-checked first: a FIFO or a device given
  // as the program is an error naming it, never a hang.
  KILN_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path, "program file"));
  uint8_t head[8] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(file.size(), sizeof(head)));
  KILN_RETURN_IF_ERROR(file.read_exact(0, {head, n}));
  for (const ProgramImporter* importer : importers_) {
    if (!importer->recognizes(std::span<const uint8_t>(head, n))) continue;
    if (!data_files.empty())
      return set_error(Error::InvalidArgument, "'" + path + "' is a " + importer->format +
                                                   ", which takes no external data files");
    return importer->import(path);
  }
  return ProgramFile::open(path, data_files);
}

}  // namespace kiln
