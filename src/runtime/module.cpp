#include "kiln/module.h"

#include "program/sealed_file.h"
#include "runtime/backend.h"
#include "runtime/input_validation.h"
#include "runtime/runtime_state.h"
#include "runtime/signature_policy.h"

namespace kiln {

Module::Module(std::shared_ptr<Runtime> runtime, std::string path, std::vector<std::string> data_files)
    : runtime_(std::move(runtime)), path_(std::move(path)), data_files_(std::move(data_files)) {}

Result<std::unique_ptr<Module>> Module::from_bytes(std::shared_ptr<Runtime> runtime, std::span<const uint8_t> bytes) {
  KILN_ASSIGN_OR_RETURN(SealedFile file, SealedFile::create(bytes, "kiln-program", "a program in memory"));
  auto module = std::make_unique<Module>(std::move(runtime), file.path());
  module->memory_file_ = std::make_unique<SealedFile>(std::move(file));
  return module;
}

Module::~Module() = default;

namespace {
// Every backend named in `options` must exist and accept its options; every
// backend the program uses must exist.
Error validate_against_program(const Runtime::State& runtime, const ProgramFile& program,
                               const LoadBackendOptionsMap& options) {
  for (const auto& [backend_name, backend_options] : options.entries()) {
    if (backend_name == kProgramOptions) continue;  // Module's own, checked by SignaturePolicy
    Backend* backend = runtime.find_backend(backend_name);
    if (!backend)
      return set_error(Error::InvalidArgument, "options given for unknown backend '" + backend_name +
                                                   "' (known: " + runtime.backend_names() + ")");
    KILN_RETURN_IF_ERROR(backend->validate_options(backend_options));
  }
  for (const MethodInfo& method : program.methods())
    if (!runtime.find_backend(method.backend))
      return set_error(Error::NotSupported, "method '" + method.name + "' needs backend '" + method.backend +
                                                "', which this build of Kiln does not have");
  return Error::Ok;
}
}  // namespace

Error Module::load(const LoadBackendOptionsMap& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Loads made on the caller's behalf (execute, load_method, method_names,
  // method_meta before any load succeeded) repeat this request, policy and all.
  requested_ = options;
  return load_locked(options);
}

Error Module::load_if_needed() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (program_) return Error::Ok;
  return load_locked(requested_);
}

Error Module::load_locked(const LoadBackendOptionsMap& options) {
  // Recorded before anything else can fail: from now on this Module runs
  // nothing that a trusted signature does not cover.
  if (!runtime_) return set_error(Error::InvalidArgument, "module '" + path_ + "' was created with a null Runtime");
  const bool asked_before = signature_required_;
  const Runtime::State& runtime = runtime_->state();
  if (SignaturePolicy::asked_for(runtime.settings, options.options_for(kProgramOptions))) signature_required_ = true;
  const Error error = try_load(options, asked_before);
  if (error != Error::Ok && signature_required_) {
    // A refused (or unusable) policy is sticky: whatever was loaded, with or
    // without it, is dropped, and every later call loads under it again.
    const std::string message = last_error_message();
    methods_.clear();
    program_.reset();
    verified_.clear();
    signed_ = false;
    return set_error(error, message);
  }
  return error;
}

Error Module::try_load(const LoadBackendOptionsMap& options, bool asked_before) {
  const Runtime::State& runtime = runtime_->state();
  KILN_RETURN_IF_ERROR(runtime.check_environment());
  std::shared_ptr<const ProgramFile> program = program_;
  if (!program) {
    KILN_ASSIGN_OR_RETURN(program, runtime.open_program(path_, data_files_));
  }
  KILN_RETURN_IF_ERROR(validate_against_program(runtime, *program, options));
  KILN_ASSIGN_OR_RETURN(SignaturePolicy policy,
                        SignaturePolicy::from(runtime.settings, options.options_for(kProgramOptions), asked_before));
  std::vector<NamedBytes> verified;
  if (policy.required) {
    if (const Error refused = policy.enforce(*program, &verified); refused != Error::Ok)
      return set_error(refused, "program '" + path_ + "' refused by the signature policy: " + last_error_message());
    // Every later read of this program is checked against its (now signed)
    // digests, whatever aoti.verify_weights says.
    program->require_digests();
  }
  // Commit: deep copy of the caller's map, so the caller may free it now.
  if (policy.required && !signed_) methods_.clear();  // loaded before a signature was required
  options_ = options;
  program_ = std::move(program);
  signed_ = policy.required;
  verified_.clear();
  // The verified copies are kept until the methods that use them load, so
  // loading reads and hashes nothing a second time.
  for (size_t i = 0; i < verified.size(); ++i) verified_.emplace(program_->named_data()[i].key, std::move(verified[i]));
  return Error::Ok;
}

bool Module::is_loaded() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return program_ != nullptr;
}

Error Module::load_method(std::string_view name, const LoadBackendOptionsMap* options) {
  return load_executor(name, options).error();
}

Result<std::shared_ptr<MethodExecutor>> Module::load_executor(std::string_view name,
                                                              const LoadBackendOptionsMap* options) {
  // Refused whether or not the method is loaded already.
  if (options && options->options_for(kProgramOptions))
    return set_error(Error::InvalidArgument, "'program' options apply to Module::load(), not to load_method()");
  KILN_RETURN_IF_ERROR(load_if_needed());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) return set_error(Error::InvalidState, "program '" + path_ + "' was unloaded by a concurrent load()");
  if (auto it = methods_.find(name); it != methods_.end()) return it->second;
  const MethodInfo* method = program_->find_method(name);
  if (!method) return set_error(Error::NotFound, "program '" + path_ + "' has no method '" + std::string(name) + "'");
  Backend* backend = runtime_->state().find_backend(method->backend);
  if (!backend)
    return set_error(Error::NotSupported, "method '" + method->name + "' needs backend '" + method->backend +
                                              "', which this build of Kiln does not have");
  const LoadBackendOptionsMap& chosen = options ? *options : options_;
  static const BackendOptions kNoOptions;
  const BackendOptions* backend_options = chosen.options_for(method->backend);
  if (!backend_options) backend_options = &kNoOptions;
  KILN_RETURN_IF_ERROR(backend->validate_options(*backend_options));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<MethodExecutor> executor,
                        backend->load_method(runtime_->state(), program_, *method, *backend_options));
  std::shared_ptr<MethodExecutor> shared(std::move(executor));
  methods_.emplace(std::string(name), shared);
  // The method holds what it needs of its verified copies now.
  verified_.erase(method->library_key);
  verified_.erase(method->weights_key);
  return shared;
}

bool Module::is_method_loaded(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return methods_.count(name) != 0;
}

Error Module::unload_method(std::string_view name) {
  std::shared_ptr<MethodExecutor> executor;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = methods_.find(name);
    if (it == methods_.end())
      return set_error(Error::NotFound, "method '" + std::string(name) + "' is not loaded");
    executor = std::move(it->second);
    methods_.erase(it);
  }
  // The executor is destroyed here, or when the last in-flight execute ends.
  return Error::Ok;
}

Result<std::vector<Tensor>> Module::execute(std::string_view name, const std::vector<Tensor>& inputs) {
  std::shared_ptr<MethodExecutor> executor;
  const MethodInfo* method = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = methods_.find(name); it != methods_.end()) executor = it->second;
  }
  if (!executor) {
    KILN_ASSIGN_OR_RETURN(executor, load_executor(name, nullptr));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!program_) return set_error(Error::InvalidState, "program '" + path_ + "' was unloaded by a concurrent load()");
    method = program_->find_method(name);
  }
  KILN_RETURN_IF_ERROR(validate_inputs(*method, inputs));
  return executor->execute(inputs);
}

Result<std::vector<std::string>> Module::method_names() {
  KILN_RETURN_IF_ERROR(load_if_needed());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) return set_error(Error::InvalidState, "program '" + path_ + "' was unloaded by a concurrent load()");
  std::vector<std::string> names;
  for (const MethodInfo& method : program_->methods()) names.push_back(method.name);
  return names;
}

Result<MethodInfo> Module::method_meta(std::string_view name) {
  KILN_RETURN_IF_ERROR(load_if_needed());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) return set_error(Error::InvalidState, "program '" + path_ + "' was unloaded by a concurrent load()");
  const MethodInfo* method = program_->find_method(name);
  if (!method) return set_error(Error::NotFound, "program '" + path_ + "' has no method '" + std::string(name) + "'");
  return *method;
}

std::shared_ptr<const ProgramFile> Module::program() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return program_;
}

}  // namespace kiln
