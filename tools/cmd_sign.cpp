// `kiln sign`: signs a program file with an Ed25519 secret key.
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "kiln/signing.h"

namespace kiln::tools {

const char kSignUsage[] =
    "usage: kiln sign PROGRAM.kiln --key NAME.key [--data FILE ...] [--out SIGNED.kiln]\n"
    "\n"
    "Signs the program's header with an Ed25519 key (see `kiln keygen`). The\n"
    "header covers the digest of every library, weights blob and contract, so\n"
    "the signature covers them too, external data files included. The file is\n"
    "rewritten atomically (a temporary file renamed over it); an existing\n"
    "signature is replaced. A program whose data fails its digests is refused.\n"
    "\n"
    "  --key FILE    secret key file written by `kiln keygen`\n"
    "  --data FILE   external data file the program names (repeat, in order)\n"
    "  --out FILE    write the signed program there instead of in place\n";

int sign_command(std::span<const std::string> args) {
  static constexpr OptionSpec kOptions[] = {
      {"--help", false}, {"--key", true}, {"--data", true}, {"--out", true}};
  ParsedArgs parsed;
  std::string problem;
  if (!parse_args(args, kOptions, &parsed, &problem)) return usage_error("sign", problem, kSignUsage);
  if (parsed.has("--help")) {
    std::fputs(kSignUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.size() != 1)
    return usage_error(
        "sign", parsed.positional.empty() ? "missing the program file" : "expected exactly one program file",
        kSignUsage);
  const auto key_path = parsed.last("--key");
  if (!key_path) return usage_error("sign", "missing --key SECRET.key", kSignUsage);
  const std::string& path = parsed.positional[0];
  const std::string out = parsed.last("--out").value_or("");

  auto key = read_secret_key(*key_path);
  if (!key.ok()) return runtime_error(key.error());
  if (Error error = sign_program_file(path, *key, parsed.all("--data"), out); error != Error::Ok)
    return runtime_error(error);
  std::printf("signed %s with key %s\n", (out.empty() ? path : out).c_str(),
              public_key_hex(public_key_of(*key)).c_str());
  return kExitOk;
}

}  // namespace kiln::tools
