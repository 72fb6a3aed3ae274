// Reads a method's input contract from the C++ wrapper source AOTInductor
// generates (`<hash>.wrapper.cpp`, which torch's .pt2 packages include next to
// the compiled library). A .pt2 package carries no contract in any other form
// a C++ reader can use, and the library's entry points report only counts and
// names, not dtypes or shapes.
//
// torch 2.11 emits one `check_input_<i>` function per input, run only when
// AOTI_RUNTIME_CHECK_INPUTS is set. Each states the input's dtype
// (`aoti_torch_dtype_<name>()`), every static size ("unmatched dim value at
// <d>, expected: <n>") and the finite bounds of each dynamic size ("dim value
// is too small at <d>, expected it to be >= <n>", "... too large ... <= <n>").
// The rank is one past the highest dimension any size or stride check names;
// a dimension no check names becomes dynamic and unbounded. Outputs are not
// checked by the generated code, so only their count and names are known.
#pragma once

#include <string_view>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln::aoti {

struct WrapperContract {
  std::vector<TensorSpec> inputs;
  /// Names only (dtype and dims unknown: see docs/pt2-import.md).
  std::vector<std::string> output_names;
};

/// Parses the wrapper source. InvalidProgram naming what is missing (no
/// `inputs_info_` names, an input without a check function or a dtype Kiln
/// does not know).
Result<WrapperContract> read_wrapper_contract(std::string_view source, std::string_view label);

}  // namespace kiln::aoti
