// `kiln verify`: checks a program's signature against trusted keys and every
// named data entry against its signed digest.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "kiln/runtime.h"
#include "kiln/signing.h"

namespace kiln::tools {

const char kVerifyUsage[] =
    "usage: kiln verify PROGRAM.kiln --trust KEYS.pub [--trust ...] [--data FILE ...]\n"
    "\n"
    "Checks that the program is signed by a trusted key, that the signature\n"
    "matches its header, and that every library and weights blob matches the\n"
    "digest the header covers. Exit status 0 when all of that holds, 1 (with\n"
    "the reason) when anything does not.\n"
    "\n"
    "  --trust FILE  trusted public key(s): a .pub file from `kiln keygen` or a\n"
    "                file of such lines (repeat for more); setting trusted_keys\n"
    "                (KILN_TRUSTED_KEYS: ':'-separated files) when none is given\n"
    "  --data FILE   external data file the program names (repeat, in order)\n";

int verify_command(std::span<const std::string> args) {
  static constexpr OptionSpec kOptions[] = {{"--help", false}, {"--trust", true}, {"--data", true}};
  ParsedArgs parsed;
  std::string problem;
  if (!parse_args(args, kOptions, &parsed, &problem)) return usage_error("verify", problem, kVerifyUsage);
  if (parsed.has("--help")) {
    std::fputs(kVerifyUsage, stdout);
    return kExitOk;
  }
  if (parsed.positional.size() != 1)
    return usage_error(
        "verify",
        parsed.positional.empty() ? "missing the program file" : "expected exactly one program file",
        kVerifyUsage);
  std::vector<std::string> key_files = parsed.all("--trust");
  if (key_files.empty()) {
    auto setting = Runtime::default_runtime()->get("trusted_keys");
    const std::string configured = setting.ok() ? std::get<std::string>(*setting) : std::string();
    for (std::string_view list = configured; !list.empty();) {
      const size_t colon = list.find(':');
      if (colon != 0) key_files.emplace_back(list.substr(0, colon));
      list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
    }
  }
  if (key_files.empty())
    return usage_error("verify", "missing --trust KEYS.pub (and setting trusted_keys, KILN_TRUSTED_KEYS, is empty)",
                       kVerifyUsage);
  const std::string& path = parsed.positional[0];

  std::vector<PublicKey> trusted;
  for (const std::string& file : key_files) {
    auto keys = read_public_keys(file);
    if (!keys.ok()) return runtime_error(keys.error());
    trusted.insert(trusted.end(), keys->begin(), keys->end());
  }
  auto program = ProgramFile::open(path, parsed.all("--data"));
  if (!program.ok()) return runtime_error(program.error());
  if (Error error = verify_signed_program(**program, trusted); error != Error::Ok) {
    set_error(error, path + ": " + last_error_message());
    return runtime_error(error);
  }
  std::printf("%s: OK: signed by trusted key %s; %zu named data entries match their digests\n", path.c_str(),
              public_key_hex((*program)->signature()->public_key).c_str(), (*program)->named_data().size());
  return kExitOk;
}

}  // namespace kiln::tools
