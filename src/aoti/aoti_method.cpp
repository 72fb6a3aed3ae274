#include "aoti/aoti_method.h"

#include <string>

#include "aoti/shim/shim_state.h"
#include "aoti/shim/tensor_handle.h"
#include "kiln/log.h"

namespace kiln::aoti {
namespace {
// The model library reports failures as 1 after printing the exception; a
// failing shim has recorded its own message on this thread, which is the more
// useful one.
Error backend_failure(const std::string& what) {
  std::string message = what + " failed";
  if (!last_error_message().empty()) message += ": " + last_error_message();
  else message += " (the model library printed the reason to stderr)";
  return set_error(Error::BackendFailed, std::move(message));
}
}  // namespace

Result<std::unique_ptr<AotiMethod>> AotiMethod::load(std::shared_ptr<const ProgramFile> program,
                                                     const MethodInfo& method, const AotiMethodConfig& config) {
  const std::string label = "method '" + method.name + "'";
  std::unique_ptr<AotiMethod> self(new AotiMethod());
  self->program_ = program;
  self->name_ = method.name;
  self->device_ = config.device;

  KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> library_bytes,
                        program->named_data_bytes(method.library_key, /*verify_digest=*/true));
  KILN_ASSIGN_OR_RETURN(self->library_, AotiLibrary::load(library_bytes, label));
  KILN_ASSIGN_OR_RETURN(self->entry_, EntryPoints::resolve(*self->library_));

  clear_error();
  const std::string device = device_string(config.device);
  if (self->entry_.create_with_device(&self->container_, config.num_models, device.c_str(), nullptr) != 0 ||
      !self->container_)
    return backend_failure(label + ": creating the AOTInductor model container on " + device);

  if (self->entry_.get_num_inputs(self->container_, &self->num_inputs_) != 0 ||
      self->entry_.get_num_outputs(self->container_, &self->num_outputs_) != 0)
    return backend_failure(label + ": querying the model's input/output counts");
  if (self->num_inputs_ != method.inputs.size() || self->num_outputs_ != method.outputs.size())
    return set_error(Error::InvalidProgram,
                     label + ": the library has " + std::to_string(self->num_inputs_) + " inputs and " +
                         std::to_string(self->num_outputs_) + " outputs but the program's contract says " +
                         std::to_string(method.inputs.size()) + " and " + std::to_string(method.outputs.size()));

  if (!method.weights_key.empty()) {
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> weights,
                          program->named_data_bytes(method.weights_key, /*verify_digest=*/true));
    if (!self->entry_.update_constants_from_blob)
      return set_error(Error::NotSupported, label + ": the library cannot load weights from a blob "
                                                    "(AOTInductorModelUpdateConstantsFromBlob is missing; "
                                                    "export with torch >= 2.9)");
    if (self->entry_.get_constants_blob_size) {
      uint64_t expected = 0;
      if (self->entry_.get_constants_blob_size(self->container_, &expected) != 0)
        return backend_failure(label + ": querying the weights blob size");
      if (expected != weights.size())
        return set_error(Error::InvalidProgram, label + ": the library expects " + std::to_string(expected) +
                                                    " bytes of weights but the program holds " +
                                                    std::to_string(weights.size()));
    }
    clear_error();
    if (self->entry_.update_constants_from_blob(self->container_, weights.data()) != 0)
      return backend_failure(label + ": loading weights");
  }
  KILN_LOG(Debug, label + " loaded on " + device);
  return self;
}

AotiMethod::~AotiMethod() {
  // The container's code lives in the library: delete it before dlclose.
  if (container_ && entry_.destroy) entry_.destroy(container_);
}

Result<std::vector<Tensor>> AotiMethod::execute(std::span<const Tensor> inputs) {
  // Input handles are stolen by the container: give it fresh handles that
  // share the caller's storage, so the caller's tensors stay untouched.
  std::vector<AtenTensorHandle> input_handles;
  input_handles.reserve(inputs.size());
  for (const Tensor& t : inputs) input_handles.push_back(new_handle(t));
  std::vector<AtenTensorHandle> output_handles(num_outputs_, nullptr);

  clear_error();
  (void)take_check_failure();  // a stale flag from an earlier call on this thread
  const AOTIRuntimeError status = entry_.run(container_, input_handles.data(), input_handles.size(),
                                             output_handles.data(), output_handles.size(), nullptr, nullptr);
  std::vector<Tensor> outputs;
  outputs.reserve(num_outputs_);
  for (AtenTensorHandle handle : output_handles) {
    if (Tensor* t = from_handle(handle)) outputs.push_back(std::move(*t));
    delete_handle(handle);
  }
  // A failed aoti_torch_check cannot stop the model from inside the hook; the
  // run is reported as failed here instead.
  const bool check_failed = take_check_failure();
  if (status != 0 || check_failed) return backend_failure("method '" + name_ + "': running the model");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      return set_error(Error::BackendFailed, "method '" + name_ + "': output " + std::to_string(i) + " is missing");
  return outputs;
}

}  // namespace kiln::aoti
