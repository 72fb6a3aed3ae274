// Reads a method's input contract from the C++ wrapper source AOTInductor
// generates (`<hash>.wrapper.cpp`, which torch's .pt2 packages include next to
// the compiled library). A .pt2 package holds no contract in any other form
// a C++ reader can use, and the library's entry points report only counts and
// names, not dtypes or shapes.
//
// torch 2.11 emits one `check_input_<i>` function per input, run only when
// AOTI_RUNTIME_CHECK_INPUTS is set. Each states the input's dtype
// (`aoti_torch_dtype_<name>()`), every static size ("unmatched dim value at
// <d>, expected: <n>") and the finite bounds of each dynamic size ("dim value
// is too small at <d>, expected it to be >= <n>", "... too large ... <= <n>").
// The rank is one past the highest dimension any size or stride check names;
// a dimension no check names becomes dynamic and unbounded. The strides the
// checks expect ("unmatched stride value at <d>, expected: <n>", emitted for
// every stride that is an integer at compile time) give the layout the
// library was compiled for (TensorSpec::dim_order): row-major when they agree
// with it, else the dense order they describe; strides that fit no dense
// order (a library compiled for a slice) are refused. A dynamic
// dimension is named after the size symbol run_impl binds it to
// (`int64_t s31 = arg4_1_size[0];`), so inputs sharing a symbol share a name.
//
// Outputs are not checked by the generated code. Their specs are inferred from
// how run_impl produces each one: `output_handles[i] = <buf>.release();` where
// <buf> (after `auto <buf> = std::move(<other>);` renames) was allocated by
// `aoti_torch_empty_strided(rank, sizes, strides, cached_torch_dtype_<d>, ...)`
// or is a `reinterpret_tensor_wrapper` view of such a buffer; sizes are integer
// literals (static) or size expressions (dynamic; an input's symbol has
// that input's bounds). Any other form leaves the output unknown.
#pragma once

#include <string_view>

#include "kiln/error.h"
#include "kiln/program_file.h"

namespace kiln::aoti {

struct WrapperContract {
  std::vector<TensorSpec> inputs;
  /// One per output; an output whose spec could not be inferred has only its
  /// name (rank 0, float32) and output_known[i] false.
  std::vector<TensorSpec> outputs;
  std::vector<bool> output_known;
};

/// Parses the wrapper source. InvalidProgram naming what is missing (no
/// `inputs_info_` names, an input without a check function or a dtype Kiln
/// does not know).
Result<WrapperContract> read_wrapper_contract(std::string_view source, std::string_view label);

}  // namespace kiln::aoti
