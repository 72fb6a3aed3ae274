#include "runtime/signature_policy.h"

#include <string>
#include <string_view>

#include "kiln/module.h"

namespace kiln {

namespace {

constexpr std::string_view kRequireSignature = "require_signature";
constexpr std::string_view kTrustedKeys = "trusted_keys";
constexpr std::string_view kTrustedKeysFile = "trusted_keys_file";

Error wrong_type(std::string_view key, const char* expected) {
  return set_error(Error::InvalidArgument, "load option '" + std::string(kProgramOptions) + "." +
                                               std::string(key) + "' must be a " + expected);
}

// Appends the keys of every file in a ':'-separated list.
Error add_key_files(std::string_view list, std::string_view origin, std::vector<PublicKey>* keys) {
  while (true) {
    const size_t colon = list.find(':');
    const std::string path(list.substr(0, colon));
    if (!path.empty()) {
      auto read = read_public_keys(path);
      if (!read.ok()) return set_error(read.error(), std::string(origin) + ": " + last_error_message());
      keys->insert(keys->end(), read->begin(), read->end());
    }
    if (colon == std::string_view::npos) return Error::Ok;
    list.remove_prefix(colon + 1);
  }
}

}  // namespace

bool SignaturePolicy::asked_for(const Settings& settings, const BackendOptions* program_options) noexcept {
  if (settings.get_bool(SettingId::RequireSignature)) return true;
  if (!program_options) return false;
  for (const auto& [key, value] : program_options->values())
    if (key == kRequireSignature && std::holds_alternative<bool>(value) && std::get<bool>(value)) return true;
  return false;
}

Result<SignaturePolicy> SignaturePolicy::from(const Settings& settings, const BackendOptions* program_options,
                                              bool already_required) {
  SignaturePolicy policy;
  std::string inline_keys, key_files;
  if (program_options) {
    for (const auto& [key, value] : program_options->values()) {
      if (key == kRequireSignature) {
        if (!std::holds_alternative<bool>(value)) return wrong_type(key, "bool");
        if (already_required && !std::get<bool>(value))
          return set_error(Error::InvalidArgument,
                           "load option '" + std::string(kProgramOptions) + "." + key +
                               "' = false: an earlier load() of this Module asked for a signature, and a "
                               "Module's signature requirement cannot be lifted (use a new Module)");
        policy.required = std::get<bool>(value);
      } else if (key == kTrustedKeys || key == kTrustedKeysFile) {
        if (!std::holds_alternative<std::string>(value)) return wrong_type(key, "string");
        (key == kTrustedKeys ? inline_keys : key_files) = std::get<std::string>(value);
      } else {
        return set_error(Error::InvalidArgument,
                         "unknown load option '" + std::string(kProgramOptions) + "." + key +
                             "' (known: require_signature, trusted_keys, trusted_keys_file)");
      }
    }
  }
  if (already_required || settings.get_bool(SettingId::RequireSignature)) policy.required = true;
  if (!policy.required) return policy;

  if (!inline_keys.empty()) {
    KILN_ASSIGN_OR_RETURN(std::vector<PublicKey> keys,
                          parse_public_keys(inline_keys, "load option 'program.trusted_keys'"));
    policy.trusted.insert(policy.trusted.end(), keys.begin(), keys.end());
  }
  KILN_RETURN_IF_ERROR(add_key_files(key_files, "load option 'program.trusted_keys_file'", &policy.trusted));
  KILN_RETURN_IF_ERROR(add_key_files(settings.get_string(SettingId::TrustedKeys),
                                     settings.from_environment(SettingId::TrustedKeys) ? "KILN_TRUSTED_KEYS"
                                                                                       : "setting 'trusted_keys'",
                                     &policy.trusted));
  if (policy.trusted.empty())
    return set_error(Error::InvalidArgument,
                     "a signed program is required but no key is trusted: give load option "
                     "'program.trusted_keys' or 'program.trusted_keys_file', or setting 'trusted_keys' "
                     "(KILN_TRUSTED_KEYS)");
  return policy;
}

Error SignaturePolicy::enforce(const ProgramFile& program, std::vector<NamedBytes>* verified) const {
  if (!required) return Error::Ok;
  return verify_signed_program(program, trusted, verified);
}

}  // namespace kiln
