// The backend interface: how the runtime hands a method of a program to the
// code that can run it (today: the AOTInductor delegate). A Runtime holds the
// backends of its build (runtime_state.h).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/backend_options.h"
#include "kiln/error.h"
#include "kiln/program_file.h"
#include "kiln/runtime.h"
#include "kiln/tensor.h"

namespace kiln {

/// One loaded method. Owns everything the backend acquired for it (library,
/// container, device weights); destroying it frees all of that.
/// execute() may be called from several threads at once.
class MethodExecutor {
 public:
  virtual ~MethodExecutor() = default;
  /// Runs the method. `inputs` have already been checked against the method's
  /// contract (validate_inputs: every view lies inside its storage); they are
  /// borrowed and not modified, and may have any strides: laying them out as
  /// the method was compiled (input_layout.h) is the executor's job, before
  /// any kernel runs. Outputs own their memory.
  virtual Result<std::vector<Tensor>> execute(std::span<const Tensor> inputs) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// The name programs use in MethodInfo::backend and options maps use as key.
  virtual std::string_view name() const noexcept = 0;
  /// InvalidArgument naming the key when an option is unknown or mistyped.
  virtual Error validate_options(const BackendOptions& options) const = 0;
  /// Loads `method` of `program` for a module of `runtime` (its devices and
  /// settings). The executor keeps `program` alive (its named data is read
  /// from it when needed); `runtime` outlives it (the Module holds both).
  virtual Result<std::unique_ptr<MethodExecutor>> load_method(Runtime::State& runtime,
                                                              std::shared_ptr<const ProgramFile> program,
                                                              const MethodInfo& method,
                                                              const BackendOptions& options) = 0;
};

}  // namespace kiln
