// The "aoti" backend: runs methods compiled by AOTInductor.
//
// Options (all optional):
//   device_index (int)  which device of the method's type to run on (default 0)
//   num_models   (int)  model instances in the container, i.e. how many
//                       execute() calls may run at once (default 1)
#pragma once

#include "runtime/backend.h"

namespace kiln::aoti {

class AotiBackend final : public Backend {
 public:
  std::string_view name() const noexcept override { return "aoti"; }
  Error validate_options(const BackendOptions& options) const override;
  Result<std::unique_ptr<MethodExecutor>> load_method(std::shared_ptr<const ProgramFile> program,
                                                      const MethodInfo& method,
                                                      const BackendOptions& options) override;
  static AotiBackend& instance();
};

}  // namespace kiln::aoti
