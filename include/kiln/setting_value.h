// The value of a setting (kiln/runtime.h, docs/settings.md): bool, int or
// string. A string is parsed for the other types, as the environment's text is.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

namespace kiln {

using SettingValue = std::variant<bool, int64_t, std::string>;

}  // namespace kiln
