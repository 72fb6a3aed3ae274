// Load options from the model configuration's `parameters`.
//
// Each parameter is a string (Triton's `string_value`). A key `aoti.<name>` or
// `program.<name>` is passed to Kiln as that load option (docs/options.md),
// typed like the CLI's --option: true/false is a bool, an integer is an int,
// anything else a string. Short names cover the usual ones:
//   num_threads -> aoti.num_threads      cuda_graphs -> aoti.cuda_graphs
//   require_signature -> program.require_signature
//   trusted_keys_file -> program.trusted_keys_file
// `method` names the program's method to serve. Any other key fails the load,
// naming it, so a misspelt option is not silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "json.h"
#include "kiln/c_api.h"
#include "triton_api.h"

namespace kiln::triton {

struct LoadOption {
  std::string group;  // "aoti" or "program"
  std::string key;
  std::variant<bool, int64_t, std::string> value;
};

struct Parameters {
  std::string method;  // empty: the program's only method, or "forward"
  std::vector<LoadOption> options;
};

// Reads `config`'s parameters into `out`.
TRITONSERVER_Error* parse_parameters(const Json& config, Parameters* out);

// A new kiln_options_t holding `options`, plus aoti.device_index when
// `device_index` >= 0. The caller frees it with kiln_options_free.
TRITONSERVER_Error* build_kiln_options(const std::vector<LoadOption>& options, int32_t device_index,
                                       kiln_options_t** out);

}  // namespace kiln::triton
