// The `kiln` command-line tool: a dispatcher over the subcommands in
// cmd_<name>.cpp. Exit codes: 0 ok, 1 runtime error, 2 usage error.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "kiln/program_file.h"
#include "kiln/version.h"

namespace {

using kiln::tools::kExitOk;
using kiln::tools::kExitUsage;

struct CommandEntry {
  const char* name;
  const char* summary;
  const char* usage;
  int (*main)(std::span<const std::string>);
};

constexpr CommandEntry kCommands[] = {
    {"inspect", "print a program file's methods, contracts and named data", kiln::tools::kInspectUsage,
     &kiln::tools::inspect_command},
    {"run", "run a method on .npy or random inputs, print outputs and timings", kiln::tools::kRunUsage,
     &kiln::tools::run_command},
    {"import", "convert a PyTorch .pt2 package (AOTInductor, no libtorch) into a program", kiln::tools::kImportUsage,
     &kiln::tools::import_command},
    {"keygen", "write a new Ed25519 key pair for signing programs", kiln::tools::kKeygenUsage,
     &kiln::tools::keygen_command},
    {"sign", "sign a program file with a secret key", kiln::tools::kSignUsage, &kiln::tools::sign_command},
    {"verify", "check a program's signature and digests against trusted keys", kiln::tools::kVerifyUsage,
     &kiln::tools::verify_command},
    {"settings", "list the runtime's settings, their defaults and their values", kiln::tools::kSettingsUsage,
     &kiln::tools::settings_command},
};

std::string general_usage() {
  std::string text =
      "usage: kiln <command> [options]\n"
      "       kiln --version\n"
      "       kiln help [command]\n"
      "\n"
      "commands:\n";
  for (const auto& command : kCommands) {
    char line[160];
    std::snprintf(line, sizeof(line), "  %-9s %s\n", command.name, command.summary);
    text += line;
  }
  text += "\n'kiln <command> --help' describes a command's options.\n"
          "Exit status: 0 success, 1 runtime error, 2 usage error.\n";
  return text;
}

const CommandEntry* find_command(std::string_view name) {
  for (const auto& command : kCommands)
    if (name == command.name) return &command;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(general_usage().c_str(), stderr);
    return kExitUsage;
  }
  const std::string& first = args[0];
  if (first == "--version" || first == "version") {
    std::printf("kiln %s (program format %u)\n", KILN_VERSION_STRING, kiln::kProgramVersion);
    return kExitOk;
  }
  if (first == "help" || first == "--help" || first == "-h") {
    if (args.size() >= 2) {
      const CommandEntry* command = find_command(args[1]);
      if (!command) {
        std::fprintf(stderr, "kiln: unknown command '%s'\n\n%s", args[1].c_str(), general_usage().c_str());
        return kExitUsage;
      }
      std::fputs(command->usage, stdout);
      return kExitOk;
    }
    std::fputs(general_usage().c_str(), stdout);
    return kExitOk;
  }
  const CommandEntry* command = find_command(first);
  if (!command) {
    std::fprintf(stderr, "kiln: unknown command '%s'\n\n%s", first.c_str(), general_usage().c_str());
    return kExitUsage;
  }
  return command->main(std::span<const std::string>(args).subspan(1));
}
