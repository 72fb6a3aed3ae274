#include "aoti/aoti_method.h"

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

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
std::string input_label(const std::string& method, size_t i, const std::vector<std::string>& names) {
  std::string label = "method '" + method + "': input " + std::to_string(i);
  if (i < names.size() && !names[i].empty()) label += " ('" + names[i] + "')";
  return label;
}

}  // namespace

Result<std::shared_ptr<OwnedStream>> OwnedStream::create(DeviceInterface* device, int index) {
  KILN_ASSIGN_OR_RETURN(StreamHandle stream, device->create_stream(index));
  return std::shared_ptr<OwnedStream>(new OwnedStream(device, index, stream));
}

OwnedStream::~OwnedStream() { device_->destroy_stream(index_, stream_); }

Result<std::shared_ptr<OwnedStream>> OwnedStream::shared_for(const void* program, DeviceInterface* device,
                                                             int index) {
  using Key = std::tuple<const void*, DeviceInterface*, int>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<OwnedStream>>* registry = new std::map<Key, std::weak_ptr<OwnedStream>>();
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = registry->begin(); it != registry->end();) it = it->second.expired() ? registry->erase(it) : ++it;
  const Key key{program, device, index};
  if (auto it = registry->find(key); it != registry->end())
    if (auto live = it->second.lock()) return live;
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<OwnedStream> stream, create(device, index));
  (*registry)[key] = stream;
  return stream;
}

Result<std::unique_ptr<AotiMethod>> AotiMethod::load(std::shared_ptr<const ProgramFile> program,
                                                     const MethodInfo& method, const AotiMethodConfig& config) {
  const std::string label = "method '" + method.name + "'";
  std::unique_ptr<AotiMethod> self(new AotiMethod());
  self->program_ = program;
  self->name_ = method.name;
  self->device_ = config.device;
  self->iface_ = get_device_interface(config.device.type);
  if (!self->iface_)
    return set_error(Error::NotSupported, label + ": no device interface for " + device_string(config.device));
  self->stream_policy_ = config.stream_policy;
  self->keep_outputs_on_device_ = config.keep_outputs_on_device;
  self->stream_ = config.stream;
  for (const TensorSpec& spec : method.inputs) self->input_names_.push_back(spec.name);

  KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> library_bytes,
                        program->named_data_bytes(method.library_key, /*verify_digest=*/true));
  KILN_ASSIGN_OR_RETURN(self->library_, AotiLibrary::load(library_bytes, label));
  KILN_ASSIGN_OR_RETURN(self->entry_, EntryPoints::resolve(*self->library_));
  self->openmp_ = OpenmpThreads::resolve(*self->library_);
  self->num_threads_ = config.num_threads > 0 ? config.num_threads : available_cpus();

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

Result<Tensor> AotiMethod::to_device(const Tensor& input, StreamHandle stream) const {
  Tensor host = input;
  if (!host.is_contiguous()) {
    // One contiguous host copy first: the device copy below moves plain bytes.
    KILN_ASSIGN_OR_RETURN(host, Tensor::empty(input.sizes(), input.dtype()));
    KILN_RETURN_IF_ERROR(copy_tensor(host, input));
  }
  const size_t nbytes = host.nbytes();
  DeviceInterface* iface = iface_;
  const int index = device_.index;
  KILN_ASSIGN_OR_RETURN(void* data, iface->allocate(nbytes > 0 ? nbytes : 1, index, stream));
  // Freed on the run's stream, after the kernels that read it; the copy is
  // dropped before execute returns, while that stream is certainly alive.
  StoragePtr storage = Storage::create(data, nbytes, device_, [iface, index, stream](void* p) {
    iface->free(p, index, stream);
  });
  Tensor out(std::move(storage), host.dtype(), host.sizes(), contiguous_strides(host.sizes()));
  KILN_RETURN_IF_ERROR(iface->copy(data, host.data_ptr(), nbytes, CopyKind::HostToDevice, index, stream));
  return out;
}

Result<Tensor> AotiMethod::to_host(const Tensor& output, StreamHandle stream) const {
  // Same sizes and strides on the host, and the bytes from element 0 to the
  // last reachable one copied as they are: covers every strided layout
  // (transposed, expanded) without a device kernel.
  KILN_ASSIGN_OR_RETURN(Tensor host, Tensor::empty_strided(output.sizes(), output.strides(), output.dtype()));
  KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(output.sizes(), output.strides(), output.dtype()));
  if (extent > 0)
    KILN_RETURN_IF_ERROR(iface_->copy(host.data_ptr(), output.data_ptr(), static_cast<size_t>(extent),
                                      CopyKind::DeviceToHost, output.device().index, stream));
  return host;
}

Result<std::vector<Tensor>> AotiMethod::execute(std::span<const Tensor> inputs) {
  const bool on_device = !device_.is_cpu();
  StreamHandle stream = nullptr;
  if (on_device)
    stream = stream_policy_ == StreamPolicy::Caller || !stream_ ? iface_->current_stream(device_.index) : stream_->get();

  // Input handles are stolen by the container: give it fresh handles that
  // share the caller's storage (or the device copy's), so the caller's
  // tensors stay untouched.
  bool any_device_input = false;
  std::vector<Tensor> staged;
  staged.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!on_device || t.device() == device_) {
      any_device_input = any_device_input || (on_device && !t.device().is_cpu());
      staged.push_back(t);
    } else if (t.device().is_cpu()) {
      auto copy = to_device(t, stream);
      if (!copy.ok())
        return set_error(copy.error(), input_label(name_, i, input_names_) + ": copying it to " +
                                           device_string(device_) + " failed: " + last_error_message());
      staged.push_back(std::move(*copy));
    } else {
      return set_error(Error::InvalidArgument, input_label(name_, i, input_names_) + " is on " +
                                                   device_string(t.device()) + " but the method runs on " +
                                                   device_string(device_) +
                                                   " (move it there, or load the method with aoti.device_index=" +
                                                   std::to_string(t.device().index) + ")");
    }
  }
  std::vector<AtenTensorHandle> input_handles;
  input_handles.reserve(staged.size());
  for (Tensor& t : staged) input_handles.push_back(new_handle(std::move(t)));
  staged.clear();
  std::vector<AtenTensorHandle> output_handles(num_outputs_, nullptr);

  clear_error();
  (void)take_check_failure();  // a stale flag from an earlier call on this thread
  AOTIRuntimeError status = 0;
  {
    const OpenmpThreads::Scope threads(openmp_, num_threads_);
    status = entry_.run(container_, input_handles.data(), input_handles.size(), output_handles.data(),
                        output_handles.size(), stream, nullptr);
  }
  std::vector<Tensor> outputs;
  outputs.reserve(num_outputs_);
  for (AtenTensorHandle handle : output_handles) {
    if (Tensor* t = from_handle(handle)) outputs.push_back(std::move(*t));
    else outputs.emplace_back();
    delete_handle(handle);
  }
  // A failed aoti_torch_check cannot stop the model from inside the hook; the
  // run is reported as failed here instead.
  const bool check_failed = take_check_failure();
  if (status != 0 || check_failed) return backend_failure("method '" + name_ + "': running the model");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      return set_error(Error::BackendFailed, "method '" + name_ + "': output " + std::to_string(i) + " is missing");
  if (!on_device) return outputs;

  if (keep_outputs_on_device_ || any_device_input) {
    // Kiln's own streams: outputs are ready when execute returns, whatever
    // stream the caller reads them on. Caller's stream: ordered there.
    if (stream_policy_ != StreamPolicy::Caller) {
      Error err = iface_->synchronize(device_.index, stream);
      if (err != Error::Ok)
        return set_error(err, "method '" + name_ + "': synchronising its stream failed: " + last_error_message());
    }
    return outputs;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].device().is_cpu()) continue;
    auto host = to_host(outputs[i], stream);  // synchronises the stream
    if (!host.ok())
      return set_error(host.error(), "method '" + name_ + "': copying output " + std::to_string(i) +
                                         " to the host failed: " + last_error_message());
    outputs[i] = std::move(*host);
  }
  return outputs;
}

}  // namespace kiln::aoti
