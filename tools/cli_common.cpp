#include "cli_common.h"

#include <cstdio>

namespace kiln::tools {

bool ParsedArgs::has(std::string_view name) const {
  for (const auto& [key, value] : options)
    if (key == name) return true;
  return false;
}

std::vector<std::string> ParsedArgs::all(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [key, value] : options)
    if (key == name) values.push_back(value);
  return values;
}

std::optional<std::string> ParsedArgs::last(std::string_view name) const {
  std::optional<std::string> result;
  for (const auto& [key, value] : options)
    if (key == name) result = value;
  return result;
}

bool parse_args(std::span<const std::string> args, std::span<const OptionSpec> specs, ParsedArgs* out,
                std::string* error) {
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      out->positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "-h") arg = "--help";
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const OptionSpec* spec = nullptr;
    for (const auto& candidate : specs)
      if (candidate.name == name) spec = &candidate;
    if (!spec) {
      *error = "unknown option '" + name + "'";
      return false;
    }
    if (!spec->takes_value) {
      if (inline_value) {
        *error = "option '" + name + "' takes no value";
        return false;
      }
      out->options.emplace_back(name, "");
      continue;
    }
    if (inline_value) {
      out->options.emplace_back(name, *inline_value);
    } else if (i + 1 < args.size()) {
      out->options.emplace_back(name, args[++i]);
    } else {
      *error = "option '" + name + "' needs a value";
      return false;
    }
  }
  return true;
}

int usage_error(std::string_view command, std::string_view message, std::string_view usage) {
  std::fprintf(stderr, "kiln %.*s: %.*s\n\n%.*s", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data(), static_cast<int>(usage.size()), usage.data());
  return kExitUsage;
}

int runtime_error(Error error) {
  const std::string& message = last_error_message();
  std::fprintf(stderr, "kiln: error: %s: %s\n", to_string(error),
               message.empty() ? "(no detail recorded)" : message.c_str());
  return kExitRuntimeError;
}

std::string dim_text(const DimSpec& dim) {
  if (!dim.dynamic) return std::to_string(dim.size);
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on chained operator+.
  std::string text = dim.name.empty() ? std::string("?") : dim.name;
  text.append(":").append(std::to_string(dim.min)).append("..");
  text.append(dim.max < 0 ? std::string("inf") : std::to_string(dim.max));
  return text;
}

std::string spec_text(const TensorSpec& spec) {
  std::string text = std::string(dtype_name(spec.dtype)) + "[";
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    if (i) text += ", ";
    text += dim_text(spec.dims[i]);
  }
  return text + "]";
}

std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    text.push_back(kDigits[b >> 4]);
    text.push_back(kDigits[b & 0xf]);
  }
  return text;
}

}  // namespace kiln::tools
