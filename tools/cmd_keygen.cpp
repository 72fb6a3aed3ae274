// `kiln keygen`: a new Ed25519 key pair for signing programs.
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "kiln/signing.h"

namespace kiln::tools {

const char kKeygenUsage[] =
    "usage: kiln keygen --out NAME\n"
    "\n"
    "Writes a new Ed25519 key pair for `kiln sign`: NAME.key (the secret key,\n"
    "mode 0600; keep it private) and NAME.pub (the public key, to give to\n"
    "`kiln verify --trust` and to the runtime's trusted keys). Existing files\n"
    "are never overwritten.\n"
    "\n"
    "  --out NAME   path of the key files without their .key/.pub suffix\n";

int keygen_command(std::span<const std::string> args) {
  static constexpr OptionSpec kOptions[] = {{"--help", false}, {"--out", true}};
  ParsedArgs parsed;
  std::string problem;
  if (!parse_args(args, kOptions, &parsed, &problem)) return usage_error("keygen", problem, kKeygenUsage);
  if (parsed.has("--help")) {
    std::fputs(kKeygenUsage, stdout);
    return kExitOk;
  }
  if (!parsed.positional.empty())
    return usage_error("keygen", "unexpected argument '" + parsed.positional[0] + "'", kKeygenUsage);
  const auto stem = parsed.last("--out");
  if (!stem || stem->empty()) return usage_error("keygen", "missing --out NAME", kKeygenUsage);

  auto keys = generate_key_pair();
  if (!keys.ok()) return runtime_error(keys.error());
  if (Error error = write_key_pair(*keys, *stem); error != Error::Ok) return runtime_error(error);
  std::printf("wrote %s.key (secret) and %s.pub (public key %s)\n", stem->c_str(), stem->c_str(),
              public_key_hex(keys->public_key).c_str());
  return kExitOk;
}

}  // namespace kiln::tools
