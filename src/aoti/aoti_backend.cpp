#include "aoti/aoti_backend.h"

#include "aoti/aoti_method.h"
#include "aoti/host_compatibility.h"
#include "kiln/device_interface.h"

namespace kiln::aoti {
namespace {
struct OptionSpec {
  const char* key;
  int64_t min;
  int64_t max;
};
constexpr OptionSpec kIntOptions[] = {
    {"device_index", 0, 1024},
    {"num_models", 1, 256},
};
}  // namespace

AotiBackend& AotiBackend::instance() {
  static AotiBackend backend;
  return backend;
}

Error AotiBackend::validate_options(const BackendOptions& options) const {
  for (const auto& [key, value] : options.values()) {
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : kIntOptions)
      if (key == s.key) spec = &s;
    if (!spec) {
      std::string known;
      for (const OptionSpec& s : kIntOptions) known += (known.empty() ? "" : ", ") + std::string(s.key);
      return set_error(Error::InvalidArgument, "unknown option 'aoti." + key + "' (known: " + known + ")");
    }
    if (!std::holds_alternative<int64_t>(value))
      return set_error(Error::InvalidArgument, "option 'aoti." + key + "' must be an integer");
    const int64_t v = std::get<int64_t>(value);
    if (v < spec->min || v > spec->max)
      return set_error(Error::InvalidArgument, "option 'aoti." + key + "' = " + std::to_string(v) +
                                                   " is outside [" + std::to_string(spec->min) + ", " +
                                                   std::to_string(spec->max) + "]");
  }
  return Error::Ok;
}

Result<std::unique_ptr<MethodExecutor>> AotiBackend::load_method(std::shared_ptr<const ProgramFile> program,
                                                                 const MethodInfo& method,
                                                                 const BackendOptions& options) {
  auto device = parse_device(method.device);
  if (!device) return set_error(Error::InvalidProgram, "method '" + method.name + "' names an unknown device '" +
                                                           method.device + "'");
  AotiMethodConfig config;
  config.device = *device;
  config.device.index = static_cast<int32_t>(options.get_int("device_index").value_or(device->index));
  config.num_models = static_cast<size_t>(options.get_int("num_models").value_or(1));
  DeviceInterface* iface = get_device_interface(config.device.type);
  if (!iface || iface->device_count() <= config.device.index)
    return set_error(Error::NotSupported, "method '" + method.name + "' runs on " + device_string(config.device) +
                                              ", which this build or machine does not have");
  KILN_RETURN_IF_ERROR(check_host_compatibility(method));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<AotiMethod> loaded, AotiMethod::load(std::move(program), method, config));
  return std::unique_ptr<MethodExecutor>(std::move(loaded));
}

}  // namespace kiln::aoti
