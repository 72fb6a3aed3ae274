#include "parameters.h"

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "errors.h"

namespace kiln::triton {

namespace {

std::variant<bool, int64_t, std::string> typed_value(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  if (!text.empty()) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == 0 && end == text.c_str() + text.size()) return static_cast<int64_t>(v);
  }
  return text;
}

struct Alias {
  const char* name;
  const char* group;
  const char* key;
};

constexpr Alias kAliases[] = {
    {"num_threads", "aoti", "num_threads"},
    {"cuda_graphs", "aoti", "cuda_graphs"},
    {"require_signature", "program", "require_signature"},
    {"trusted_keys_file", "program", "trusted_keys_file"},
};

}  // namespace

TRITONSERVER_Error* parse_parameters(const Json& config, Parameters* out) {
  const Json* params = config.find("parameters");
  if (params == nullptr) return nullptr;
  if (!params->is_object()) return error(TRITONSERVER_ERROR_INVALID_ARG, "model config: parameters is not a map");
  for (const auto& [name, entry] : params->members()) {
    const Json* sv = entry.find("string_value");
    std::optional<std::string> text = sv ? sv->as_string() : std::nullopt;
    if (!text) {
      return error(TRITONSERVER_ERROR_INVALID_ARG, "model config: parameter '" + name + "' has no string_value");
    }
    if (name == "method") {
      out->method = *text;
      continue;
    }
    std::string group, key;
    for (const Alias& alias : kAliases) {
      if (name == alias.name) {
        group = alias.group;
        key = alias.key;
      }
    }
    if (group.empty()) {
      size_t dot = name.find('.');
      std::string prefix = dot == std::string::npos ? "" : name.substr(0, dot);
      if (prefix == "aoti" || prefix == "program") {
        group = prefix;
        key = name.substr(dot + 1);
      }
    }
    if (group.empty() || key.empty()) {
      return error(TRITONSERVER_ERROR_INVALID_ARG,
                   "model config: unknown parameter '" + name +
                       "' (the kiln backend reads method, num_threads, cuda_graphs, require_signature, "
                       "trusted_keys_file, aoti.<option> and program.<option>)");
    }
    out->options.push_back({group, key, typed_value(*text)});
  }
  return nullptr;
}

TRITONSERVER_Error* build_kiln_options(const std::vector<LoadOption>& options, int32_t device_index,
                                       kiln_options_t** out) {
  kiln_options_t* raw = nullptr;
  KILN_TRITON_CALL(kiln_options_create(&raw), "creating load options");
  std::unique_ptr<kiln_options_t, void (*)(kiln_options_t*)> opts(raw, kiln_options_free);
  for (const LoadOption& o : options) {
    kiln_status_t status = KILN_OK;
    if (const bool* b = std::get_if<bool>(&o.value)) {
      status = kiln_options_set_bool(opts.get(), o.group.c_str(), o.key.c_str(), *b);
    } else if (const int64_t* i = std::get_if<int64_t>(&o.value)) {
      status = kiln_options_set_int(opts.get(), o.group.c_str(), o.key.c_str(), *i);
    } else {
      status = kiln_options_set_string(opts.get(), o.group.c_str(), o.key.c_str(),
                                       std::get<std::string>(o.value).c_str());
    }
    if (status != KILN_OK) return kiln_error(status, "setting load option " + o.group + "." + o.key);
  }
  if (device_index >= 0) {
    KILN_TRITON_CALL(kiln_options_set_int(opts.get(), "aoti", "device_index", device_index),
                     "setting aoti.device_index");
  }
  *out = opts.release();
  return nullptr;
}

}  // namespace kiln::triton
