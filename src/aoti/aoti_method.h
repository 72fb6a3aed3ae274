// AotiMethod: one method of a program, loaded: its library, its AOTInductor
// model container (with weights on the device), and how to run it.
//
// Ownership: owns the container (deleted before the library is closed) and the
// library; keeps the ProgramFile alive. execute() may be called from several
// threads: the container hands each concurrent call its own model instance
// (up to num_models) and queues the rest.
#pragma once

#include <memory>

#include "aoti/aoti_library.h"
#include "aoti/entry_points.h"
#include "kiln/device.h"
#include "runtime/backend.h"

namespace kiln::aoti {

struct AotiMethodConfig {
  Device device;
  size_t num_models = 1;
};

class AotiMethod final : public MethodExecutor {
 public:
  static Result<std::unique_ptr<AotiMethod>> load(std::shared_ptr<const ProgramFile> program,
                                                  const MethodInfo& method, const AotiMethodConfig& config);
  ~AotiMethod() override;

  Result<std::vector<Tensor>> execute(std::span<const Tensor> inputs) override;

 private:
  AotiMethod() = default;

  std::shared_ptr<const ProgramFile> program_;
  std::string name_;
  Device device_;
  std::unique_ptr<AotiLibrary> library_;
  EntryPoints entry_;
  ContainerHandle container_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
};

}  // namespace kiln::aoti
