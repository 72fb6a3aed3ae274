#include "kiln/backend_options.h"

namespace kiln {

const OptionValue* BackendOptions::find(std::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<bool> BackendOptions::get_bool(std::string_view key) const {
  const OptionValue* v = find(key);
  if (v && std::holds_alternative<bool>(*v)) return std::get<bool>(*v);
  return std::nullopt;
}

std::optional<int64_t> BackendOptions::get_int(std::string_view key) const {
  const OptionValue* v = find(key);
  if (v && std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v);
  return std::nullopt;
}

std::optional<std::string> BackendOptions::get_string(std::string_view key) const {
  const OptionValue* v = find(key);
  if (v && std::holds_alternative<std::string>(*v)) return std::get<std::string>(*v);
  return std::nullopt;
}

const BackendOptions* LoadBackendOptionsMap::options_for(std::string_view backend) const {
  auto it = map_.find(backend);
  return it == map_.end() ? nullptr : &it->second;
}

}  // namespace kiln
