// The backend interface: how the runtime hands a method of a program to the
// code that can run it (today: the AOTInductor delegate), and the registry of
// backends, filled from one explicit list (src/builtin_backends.cpp).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/backend_options.h"
#include "kiln/error.h"
#include "kiln/program_file.h"
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
  /// Loads `method` of `program`. The executor keeps `program` alive (its
  /// named data is read from it when needed).
  virtual Result<std::unique_ptr<MethodExecutor>> load_method(std::shared_ptr<const ProgramFile> program,
                                                              const MethodInfo& method,
                                                              const BackendOptions& options) = 0;
};

/// The backend registered under `name`, or nullptr.
Backend* find_backend(std::string_view name);
/// Names of every registered backend (for error messages).
std::vector<std::string_view> backend_names();

/// Registers one backend; the registry does not own it (static objects).
void register_backend(Backend* backend);
/// Defined in src/builtin_backends.cpp: the one explicit list of backends.
void register_builtin_backends();

}  // namespace kiln
