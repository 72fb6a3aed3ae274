// The `kiln` subcommands. Each lives in its own cmd_<name>.cpp and is
// dispatched from main.cpp. A command receives the arguments after its name
// and returns a process exit code (see ExitCode in cli_common.h).
#pragma once

#include <span>
#include <string>

namespace kiln::tools {

extern const char kInspectUsage[];
int inspect_command(std::span<const std::string> args);

extern const char kRunUsage[];
int run_command(std::span<const std::string> args);

extern const char kImportUsage[];
int import_command(std::span<const std::string> args);
extern const char kKeygenUsage[];
int keygen_command(std::span<const std::string> args);

extern const char kSignUsage[];
int sign_command(std::span<const std::string> args);

extern const char kVerifyUsage[];
int verify_command(std::span<const std::string> args);

extern const char kSettingsUsage[];
int settings_command(std::span<const std::string> args);

}  // namespace kiln::tools
