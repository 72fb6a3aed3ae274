#include "aoti/aoti_backend.h"

#include <cstdint>
#include <string>

#include "aoti/aoti_method.h"
#include "aoti/host_compatibility.h"
#include "core/device_interface.h"
#include "runtime/runtime_state.h"

namespace kiln::aoti {
namespace {

enum class OptionType { Int, Bool, String };

struct OptionSpec {
  const char* key;
  OptionType type;
  int64_t min = 0;  // Int only
  int64_t max = 0;
  const char* const* choices = nullptr;  // String only, null-terminated
};

constexpr const char* kStreamChoices[] = {"per_method", "shared", "caller", "per_thread", nullptr};
constexpr const char* kWeightsChoices[] = {"auto", "kiln", "library", nullptr};

constexpr OptionSpec kOptions[] = {
    {"device_index", OptionType::Int, 0, 1024, nullptr},
    {"num_models", OptionType::Int, 1, 256, nullptr},
    {"stream", OptionType::String, 0, 0, kStreamChoices},
    {"keep_outputs_on_device", OptionType::Bool, 0, 0, nullptr},
    {"max_memory_bytes", OptionType::Int, 1, INT64_MAX, nullptr},
    {"cuda_graphs", OptionType::Bool, 0, 0, nullptr},
    {"cuda_graph_cache_size", OptionType::Int, 1, 1024, nullptr},
    {"weights", OptionType::String, 0, 0, kWeightsChoices},
    {"verify_weights", OptionType::Bool, 0, 0, nullptr},
    {"num_threads", OptionType::Int, 1, 4096, nullptr},
    {"seed", OptionType::Int, 0, INT64_MAX, nullptr},
};

const char* type_name(OptionType type) {
  switch (type) {
    case OptionType::Int: return "an integer";
    case OptionType::Bool: return "a boolean";
    case OptionType::String: return "a string";
  }
  return "?";
}

bool has_type(const OptionValue& value, OptionType type) {
  switch (type) {
    case OptionType::Int: return std::holds_alternative<int64_t>(value);
    case OptionType::Bool: return std::holds_alternative<bool>(value);
    case OptionType::String: return std::holds_alternative<std::string>(value);
  }
  return false;
}

StreamPolicy stream_policy(const BackendOptions& options) {
  const std::string s = options.get_string("stream").value_or("per_method");
  if (s == "shared") return StreamPolicy::Shared;
  if (s == "caller") return StreamPolicy::Caller;
  if (s == "per_thread") return StreamPolicy::PerThread;
  return StreamPolicy::PerMethod;
}

}  // namespace

AotiBackend& AotiBackend::instance() {
  static AotiBackend backend;
  return backend;
}

Error AotiBackend::validate_options(const BackendOptions& options) const {
  for (const auto& [key, value] : options.values()) {
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : kOptions)
      if (key == s.key) spec = &s;
    if (!spec) {
      std::string known;
      for (const OptionSpec& s : kOptions) known += (known.empty() ? "" : ", ") + std::string(s.key);
      return set_error(Error::InvalidArgument, "unknown option 'aoti." + key + "' (known: " + known + ")");
    }
    if (!has_type(value, spec->type))
      return set_error(Error::InvalidArgument, "option 'aoti." + key + "' must be " + type_name(spec->type));
    if (spec->type == OptionType::Int) {
      const int64_t v = std::get<int64_t>(value);
      if (v < spec->min || v > spec->max)
        return set_error(Error::InvalidArgument, "option 'aoti." + key + "' = " + std::to_string(v) +
                                                     " is outside [" + std::to_string(spec->min) + ", " +
                                                     std::to_string(spec->max) + "]");
    }
    if (spec->type == OptionType::String && spec->choices) {
      const std::string& v = std::get<std::string>(value);
      bool found = false;
      std::string choices;
      for (const char* const* c = spec->choices; *c; ++c) {
        found = found || v == *c;
        choices += (choices.empty() ? "\"" : ", \"") + std::string(*c) + "\"";
      }
      if (!found)
        return set_error(Error::InvalidArgument,
                         "option 'aoti." + key + "' = \"" + v + "\" is not one of " + choices);
    }
  }
  return Error::Ok;
}

Result<std::unique_ptr<MethodExecutor>> AotiBackend::load_method(Runtime::State& runtime,
                                                                 std::shared_ptr<const ProgramFile> program,
                                                                 const MethodInfo& method,
                                                                 const BackendOptions& options) {
  // `options` were validated by the Module (validate_options above).
  auto device = parse_device(method.device);
  if (!device) return set_error(Error::InvalidProgram, "method '" + method.name + "' names an unknown device '" +
                                                           method.device + "'");
  AotiMethodConfig config;
  config.device = *device;
  config.device.index = static_cast<int32_t>(options.get_int("device_index").value_or(device->index));
  config.num_models = static_cast<size_t>(options.get_int("num_models").value_or(1));
  config.stream_policy = stream_policy(options);
  config.keep_outputs_on_device = options.get_bool("keep_outputs_on_device").value_or(false);
  config.max_memory_bytes = static_cast<size_t>(options.get_int("max_memory_bytes").value_or(0));
  config.cuda_graphs = options.get_bool("cuda_graphs").value_or(false);
  // auto: Kiln, on every device (programs without a weights table fall back
  // to the library). On the CPU the library copies the blob into memory of
  // its own (torch 2.11: 187 MiB and 215 ms for a Whisper-base decoder,
  // 33 s for a 4.6 GB Gemma3), where Kiln's parameters are views of the
  // weights blob it read (no second copy, per-call time unchanged).
  const std::string weights = options.get_string("weights").value_or("auto");
  config.kiln_places_weights = weights != "library";
  config.verify_weights = options.get_bool("verify_weights").value_or(true);
  config.cuda_graph_cache_size = static_cast<size_t>(options.get_int("cuda_graph_cache_size").value_or(8));
  config.num_threads = static_cast<int>(options.get_int("num_threads").value_or(0));
  if (auto seed = options.get_int("seed")) config.seed = static_cast<uint64_t>(*seed);
  auto found = runtime.device(config.device.type);
  if (!found.ok())
    return set_error(Error::NotSupported, "method '" + method.name + "' runs on " + device_string(config.device) +
                                              ", which this build or machine does not have: " + last_error_message());
  DeviceInterface* iface = *found;
  if (iface->device_count() <= config.device.index)
    return set_error(Error::NotSupported, "method '" + method.name + "' runs on " + device_string(config.device) +
                                              ", which this machine does not have (it has " +
                                              std::to_string(iface->device_count()) + " " +
                                              device_type_name(config.device.type) + " device(s))");
  config.device_interface = iface;
  KILN_RETURN_IF_ERROR(check_host_compatibility(method));
  if (config.device.type == DeviceType::CUDA) {
    KILN_ASSIGN_OR_RETURN(int cc, iface->compute_capability(config.device.index));
    KILN_RETURN_IF_ERROR(check_cuda_compatibility(method, cc, device_string(config.device)));
  }
  if (!config.device.is_cpu()) {
    if (config.stream_policy == StreamPolicy::PerMethod) {
      KILN_ASSIGN_OR_RETURN(config.stream, OwnedStream::create(iface, config.device.index));
    } else if (config.stream_policy == StreamPolicy::Shared) {
      KILN_ASSIGN_OR_RETURN(config.stream, OwnedStream::shared_for(program.get(), iface, config.device.index));
    }
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<AotiMethod> loaded, AotiMethod::load(std::move(program), method, config));
  return std::unique_ptr<MethodExecutor>(std::move(loaded));
}

}  // namespace kiln::aoti
