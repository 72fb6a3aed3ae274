// Options for backends: string key -> bool / int / string, grouped per backend.
//
// Ownership: both types own deep copies of everything put in them; callers
// may free their own strings right after a set call. A backend validates its
// options at load time and rejects unknown keys, naming them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "kiln/export.h"

namespace kiln {

using OptionValue = std::variant<bool, int64_t, std::string>;

class KILN_API BackendOptions {
 public:
  void set(std::string_view key, bool value) { values_[std::string(key)] = value; }
  void set(std::string_view key, int64_t value) { values_[std::string(key)] = value; }
  void set(std::string_view key, int value) { values_[std::string(key)] = static_cast<int64_t>(value); }
  void set(std::string_view key, std::string_view value) { values_[std::string(key)] = std::string(value); }
  void set(std::string_view key, const char* value) { values_[std::string(key)] = std::string(value); }

  const OptionValue* find(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;

  const std::map<std::string, OptionValue, std::less<>>& values() const noexcept { return values_; }
  bool empty() const noexcept { return values_.empty(); }

 private:
  std::map<std::string, OptionValue, std::less<>> values_;
};

/// Options for several backends, keyed by backend name ("aoti").
class KILN_API LoadBackendOptionsMap {
 public:
  void set_options(std::string_view backend, BackendOptions options) {
    map_[std::string(backend)] = std::move(options);
  }
  /// nullptr when no options were given for `backend`.
  const BackendOptions* options_for(std::string_view backend) const;
  const std::map<std::string, BackendOptions, std::less<>>& entries() const noexcept { return map_; }

 private:
  std::map<std::string, BackendOptions, std::less<>> map_;
};

}  // namespace kiln
