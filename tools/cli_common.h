// Plumbing shared by the `kiln` subcommands: exit codes, argument parsing,
// error reporting and the one-line text form of an input/output contract.
//
// Not thread-safe (writes to stdout/stderr); the CLI is single-threaded.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln::tools {

/// Process exit statuses. Scripts rely on them: keep them stable.
enum ExitCode : int {
  kExitOk = 0,
  kExitRuntimeError = 1,  ///< the request was valid but failed (bad file, model error)
  kExitUsage = 2,         ///< the command line itself is wrong
};

/// One option a command accepts: "--name" alone, or "--name VALUE" / "--name=VALUE".
struct OptionSpec {
  std::string_view name;
  bool takes_value;
};

/// Options and positional arguments in command-line order. Options given
/// several times keep every value.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;

  bool has(std::string_view name) const;
  std::vector<std::string> all(std::string_view name) const;
  std::optional<std::string> last(std::string_view name) const;
};

/// Parses `args` (after the subcommand name). "-h" means "--help"; "--" ends
/// options. Returns false with `*error` set for an unknown option or a
/// missing value.
bool parse_args(std::span<const std::string> args, std::span<const OptionSpec> specs, ParsedArgs* out,
                std::string* error);

/// Prints "kiln <command>: <message>" and the usage text to stderr; returns kExitUsage.
int usage_error(std::string_view command, std::string_view message, std::string_view usage);

/// Prints "kiln: error: <Error name>: <last_error_message()>" to stderr; returns kExitRuntimeError.
int runtime_error(Error error);

/// "float32[s0:1..64, 16]": dtype, then each dimension as its size or, when
/// dynamic, as symbol:min..max (max "inf" when unbounded).
std::string spec_text(const TensorSpec& spec);
/// One dimension as spec_text writes it.
std::string dim_text(const DimSpec& dim);

/// Lower-case hex of a digest.
std::string hex(std::span<const uint8_t> bytes);

}  // namespace kiln::tools
