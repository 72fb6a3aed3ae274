#include "aoti/aoti_method.h"

#include <algorithm>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "shims/common/memory_budget.h"
#include "shims/common/shim_state.h"
#include "aoti/split.h"
#include "shims/common/tensor_handle.h"
#include "aoti/weak_registry.h"
#include "aoti/weight_placement.h"
#include "kiln/log.h"
#include "runtime/input_layout.h"

namespace kiln::aoti {
namespace {
// The model library reports failures as 1 after printing the exception; a
// failing shim has recorded its own message on this thread, which is the more
// useful one. A shim that ran out of memory (or out of the method's memory
// budget) makes the whole call an OutOfMemory.
Error backend_failure(const std::string& what) {
  const Error code = take_out_of_memory() ? Error::OutOfMemory : Error::BackendFailed;
  std::string message = what + " failed";
  if (!last_error_message().empty()) message += ": " + last_error_message();
  else message += " (the model library printed the reason to stderr)";
  return set_error(code, std::move(message));
}
// Method metadata `mutated_inputs` (written by the exporter): the names of the
// inputs the compiled code writes in place, comma-separated.
Result<std::set<size_t>> mutated_input_indices(const MethodInfo& method, const std::string& label) {
  std::set<size_t> indices;
  auto it = method.metadata.find("mutated_inputs");
  if (it == method.metadata.end() || it->second.empty()) return indices;
  for (std::string_view name : split(it->second, ',')) {
    size_t i = 0;
    while (i < method.inputs.size() && method.inputs[i].name != name) ++i;
    if (i == method.inputs.size())
      return set_error(Error::InvalidProgram, label + ": metadata mutated_inputs names '" + std::string(name) +
                                                  "', which is not one of the method's inputs");
    indices.insert(i);
  }
  return indices;
}

Result<uint64_t> named_data_size(const ProgramFile& program, const std::string& key) {
  for (const NamedDataInfo& info : program.named_data())
    if (info.key == key) return info.size;
  return set_error(Error::InvalidProgram, "no named data entry '" + key + "'");
}

std::string input_label(const std::string& method, size_t i, const std::vector<std::string>& names) {
  std::string label = "method '" + method + "': input " + std::to_string(i);
  if (i < names.size() && !names[i].empty()) label += " ('" + names[i] + "')";
  return label;
}

// Device inputs start on this boundary or are copied: Inductor compiles
// vectorised accesses for a GPU input whose example was aligned (a fresh
// allocation always is), and unlike torch's Python wrapper, which copies a
// misaligned input, AOTInductor's C++ wrapper passes it straight to them.
constexpr uintptr_t kDeviceInputAlignment = 16;

bool misaligned_on_device(const Tensor& t) {
  return !t.device().is_cpu() && t.numel() > 0 &&
         reinterpret_cast<uintptr_t>(t.data_ptr()) % kDeviceInputAlignment != 0;
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
  static auto* registry = new WeakRegistry<Key, OwnedStream>();  // never destroyed: used until exit
  return registry->get_or_create(Key{program, device, index}, [&] { return create(device, index); });
}

Result<StreamHandle> OwnedStream::for_this_thread(DeviceInterface* device, int index) {
  // Keyed by device interface and index; a thread runs few devices.
  thread_local std::map<std::pair<DeviceInterface*, int>, std::shared_ptr<OwnedStream>> streams;
  auto& slot = streams[{device, index}];
  if (!slot) {
    KILN_ASSIGN_OR_RETURN(slot, create(device, index));
  }
  return slot->get();
}

Result<std::unique_ptr<AotiMethod>> AotiMethod::load(std::shared_ptr<const ProgramFile> program,
                                                     const MethodInfo& method, const AotiMethodConfig& config) {
  const std::string label = "method '" + method.name + "'";
  std::unique_ptr<AotiMethod> self(new AotiMethod());
  self->program_ = program;
  self->name_ = method.name;
  self->device_ = config.device;
  self->iface_ = config.device_interface;
  if (!self->iface_)
    return set_error(Error::NotSupported, label + ": no device interface for " + device_string(config.device));
  self->stream_policy_ = config.stream_policy;
  self->keep_outputs_on_device_ = config.keep_outputs_on_device;
  self->stream_ = config.stream;
  for (const TensorSpec& spec : method.inputs) {
    self->input_names_.push_back(spec.name);
    self->input_dim_orders_.push_back(spec.dim_order);
  }
  if (config.max_memory_bytes > 0) self->budget_ = MemoryBudget::create(config.max_memory_bytes, label);
  MemoryBudgetScope budget_scope(self->budget_.get());

  // The weights first: their digest check, their budget charge, and (when
  // Kiln places them) their upload, which on a GPU runs on a thread of its
  // own while the library and its container load below.
  // Blobs are read into private copies and digest-checked on those copies
  // (the weights unless aoti.verify_weights is off and no signature policy
  // holds): what was checked is what is loaded, whatever happens to the file
  // now. Unchecked weights that Kiln places on a device are the exception:
  // the upload reads them from the file straight into its staging buffers,
  // with no host copy of the blob (a file truncated meanwhile is an IoError).
  NamedBytes weights;
  std::unique_ptr<WeightPlacement> placement;
  if (!method.weights_key.empty()) {
    KILN_ASSIGN_OR_RETURN(const uint64_t weights_size, named_data_size(*program, method.weights_key));
    const bool from_file = !config.device.is_cpu() && config.kiln_places_weights && !config.verify_weights &&
                           !program->digests_required() && method.metadata.count(std::string(kConstantsMetadataKey));
    if (!from_file) {
      KILN_ASSIGN_OR_RETURN(weights, program->read_named_data(method.weights_key, config.verify_weights));
    }
    // Weights are charged to the budget until unload, before anything holds
    // them: the container copies the blob into an allocation of its own (host
    // malloc or cudaMalloc, outside the shims), or Kiln places them (shared by
    // the program's methods, but each method's limit counts them).
    if (self->budget_) {
      KILN_RETURN_IF_ERROR(self->budget_->charge(weights_size, "its weights"));
      self->weights_charged_ = weights_size;
    }
    if (config.kiln_places_weights) {
      // A device may get ready for the upload meanwhile (CUDA pins its
      // staging buffers on yet another thread; the CPU has nothing to do).
      self->iface_->prepare_upload(weights_size, config.device.index);
      WeightsSource source;
      source.bytes = weights;
      if (from_file)
        source.reader = [program, key = method.weights_key](uint64_t offset, std::span<uint8_t> out) {
          return program->read_named_range(key, offset, out);
        };
      KILN_ASSIGN_OR_RETURN(placement, self->start_placing_weights(method, std::move(source), weights_size, label));
    }
  }
  {
    KILN_ASSIGN_OR_RETURN(NamedBytes library_bytes, program->read_named_data(method.library_key, /*verify_digest=*/true));
    KILN_ASSIGN_OR_RETURN(self->library_, AotiLibrary::load(library_bytes.bytes(), label));
  }
  KILN_ASSIGN_OR_RETURN(self->entry_, EntryPoints::resolve(*self->library_));
  self->openmp_ = cpu::OpenmpThreads::resolve_with([&](const char* name) { return self->library_->symbol(name); });
  self->num_threads_ = config.num_threads > 0 ? config.num_threads : cpu::available_cpus();
  self->random_ = std::make_unique<RandomSource>(config.seed ? *config.seed : entropy_seed());

  KILN_ASSIGN_OR_RETURN(self->kernels_, KernelDirectory::create(*program, method));

  clear_error();
  (void)take_out_of_memory();  // a stale error from an earlier call on this thread
  const std::string device = device_string(config.device);
  const char* kernel_dir = self->kernels_ ? self->kernels_->path().c_str() : nullptr;
  if (self->entry_.create_with_device(&self->container_, config.num_models, device.c_str(), kernel_dir) != 0 ||
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
    bool placed = false;
    if (placement) {
      KILN_ASSIGN_OR_RETURN(placed, self->hand_placed_weights(*placement, label));
    }
    // The library copies what it needs while loading (torch 2.11's model_base.h
    // reads the blob pointer only in load_constants), so the private copy can
    // go when load() returns.
    if (!placed && !weights.owner()) {
      KILN_ASSIGN_OR_RETURN(weights, program->read_named_data(method.weights_key, config.verify_weights));
    }
    if (!placed) KILN_RETURN_IF_ERROR(self->load_weights_blob(weights.bytes(), label));
  }
  KILN_ASSIGN_OR_RETURN(self->mutated_inputs_, mutated_input_indices(method, label));
  if (config.cuda_graphs) {
    if (config.device.type != DeviceType::CUDA)
      return set_error(Error::InvalidArgument, label + ": aoti.cuda_graphs applies to CUDA methods, and this one "
                                                       "runs on " + device);
    if (config.num_models != 1)
      return set_error(Error::InvalidArgument, label + ": aoti.cuda_graphs runs one model instance; "
                                                       "leave aoti.num_models at 1");
    if (!self->entry_.run_single_threaded)
      return set_error(Error::NotSupported, label + ": the library has no AOTInductorModelContainerRunSingleThreaded "
                                                    "entry point, which CUDA graphs need (export with torch >= 2.6)");
    // Inputs written in place are bound by address rather than copied, so a
    // replay writes the caller's buffer as an eager run does (graph_replay.h).
    std::vector<bool> bound(method.inputs.size(), false);
    for (size_t i : self->mutated_inputs_) bound[i] = true;
    self->graphs_ = std::make_unique<GraphReplay>(self->iface_, config.device, config.cuda_graph_cache_size, label,
                                                  std::move(bound));
  }
  KILN_LOG(Debug, label + " loaded on " + device);
  return self;
}

AotiMethod::~AotiMethod() {
  // Graphs replay the container's kernels and hold its buffers: drop them first.
  graphs_.reset();
  // The container's code lives in the library: delete it before dlclose.
  if (container_ && entry_.destroy) entry_.destroy(container_);
  // The handles the container made to its user-managed weights and never deletes.
  for (AtenTensorHandle h : container_constant_handles_) delete_handle(h);
  // Then what the library acquired and never releases itself (CUDA: its kernel
  // modules), before the library goes.
  if (iface_ && library_) iface_->release_library_kernels(device_.index, library_->base());
  if (budget_) budget_->release(weights_charged_);
  for (AtenTensorHandle h : constant_handles_) delete_handle(h);
}

Error AotiMethod::load_weights_blob(std::span<const uint8_t> weights, const std::string& label) {
  if (!entry_.update_constants_from_blob)
    return set_error(Error::NotSupported, label + ": the library cannot load weights from a blob "
                                                  "(AOTInductorModelUpdateConstantsFromBlob is missing; "
                                                  "export with torch >= 2.9)");
  if (entry_.get_constants_blob_size) {
    uint64_t expected = 0;
    if (entry_.get_constants_blob_size(container_, &expected) != 0)
      return backend_failure(label + ": querying the weights blob size");
    if (expected != weights.size())
      return set_error(Error::InvalidProgram, label + ": the library expects " + std::to_string(expected) +
                                                  " bytes of weights but the program holds " +
                                                  std::to_string(weights.size()));
  }
  clear_error();
  if (entry_.update_constants_from_blob(container_, weights.data()) != 0)
    return backend_failure(label + ": loading weights");
  return Error::Ok;
}

Result<std::unique_ptr<WeightPlacement>> AotiMethod::start_placing_weights(const MethodInfo& method,
                                                                           WeightsSource blob, uint64_t blob_size,
                                                                           const std::string& label) {
  auto table = method.metadata.find(std::string(kConstantsMetadataKey));
  if (table == method.metadata.end()) return std::unique_ptr<WeightPlacement>();
  auto entries = parse_constants_table(table->second, blob_size);
  if (!entries.ok()) return set_error(entries.error(), label + ": " + last_error_message());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<WeightStore> store, WeightStore::for_program(program_, device_));
  return WeightPlacement::start(std::move(store), std::move(*entries), std::move(blob),
                                /*on_thread=*/!device_.is_cpu());
}

Result<bool> AotiMethod::hand_placed_weights(WeightPlacement& placement, const std::string& label) {
  // A library too old to take user-managed weights loads its blob itself; the
  // placement (started before the library was known) is dropped unused.
  if (!entry_.update_user_managed_constant_buffer_pairs) return false;
  auto tensors = placement.take();
  if (!tensors.ok()) return set_error(tensors.error(), label + ": " + last_error_message());
  const std::vector<ConstantEntry>& entries = placement.entries();
  std::vector<ConstantMapEntry> pairs;
  pairs.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    constant_handles_.push_back(new_handle((*tensors)[i]));
    pairs.push_back(ConstantMapEntry{entries[i].name.c_str(), constant_handles_.back()});
  }
  clear_error();
  NewHandleCapture capture;  // the container's own handles to the weights (tensor_handle.h)
  const int32_t status = entry_.update_user_managed_constant_buffer_pairs(
      container_, pairs.data(), pairs.size(), /*use_inactive=*/false, /*validate_full_update=*/true);
  container_constant_handles_ = capture.take();
  if (status != 0) return backend_failure(label + ": handing the weights to the model container");
  weights_ = placement.store();
  return true;
}

Result<Tensor> AotiMethod::to_device(const Tensor& host, StreamHandle stream) const {
  // Dense in its compiled layout (conform_inputs): its elements are the
  // nbytes() bytes from data_ptr(), moved as they are, and the device copy
  // keeps the strides, so the layout survives the upload.
  const size_t nbytes = host.nbytes();
  DeviceInterface* iface = iface_;
  const int index = device_.index;
  KILN_ASSIGN_OR_RETURN(void* data, iface->allocate(nbytes > 0 ? nbytes : 1, index, stream));
  // Freed on the run's stream, after the kernels that read it; the copy is
  // dropped before execute returns, while that stream is certainly alive.
  StoragePtr storage = Storage::create(data, nbytes, device_, [iface, index, stream](void* p) {
    iface->free(p, index, stream);
  });
  Tensor out(std::move(storage), host.dtype(), host.sizes(), host.strides());
  if (nbytes > 0)
    KILN_RETURN_IF_ERROR(iface->copy(data, host.data_ptr(), nbytes, CopyKind::HostToDevice, index, stream));
  return out;
}

Result<Tensor> AotiMethod::relayout(const Tensor& input, std::span<const uint8_t> dim_order,
                                    StreamHandle stream) const {
  if (input.device().is_cpu()) return host_copy_in_layout(input, dim_order);
  std::vector<int64_t> strides = dense_strides(input.sizes(), dim_order);
  // On the device, queued on the run's stream before the kernels that read
  // it, and freed there after them (the copy is dropped before execute
  // returns, while that stream is certainly alive).
  const size_t nbytes = input.nbytes();
  DeviceInterface* iface = iface_;
  const int index = device_.index;
  KILN_ASSIGN_OR_RETURN(void* data, iface->allocate(nbytes > 0 ? nbytes : 1, index, stream));
  StoragePtr storage = Storage::create(data, nbytes, device_,
                                       [iface, index, stream](void* p) { iface->free(p, index, stream); });
  Tensor out(std::move(storage), input.dtype(), input.sizes(), std::move(strides));
  if (nbytes == 0) return out;
  if (has_dense_layout(input.sizes(), input.strides(), dim_order))  // only misaligned: the bytes as they are
    KILN_RETURN_IF_ERROR(
        iface->copy(data, input.data_ptr(), nbytes, CopyKind::DeviceToDevice, index, stream));
  else
    KILN_RETURN_IF_ERROR(iface->copy_strided(data, out.strides().data(), input.data_ptr(),
                                             input.strides().data(), input.sizes().data(), input.dim(),
                                             element_size(input.dtype()), index, stream));
  return out;
}

Result<std::vector<Tensor>> AotiMethod::conform_inputs(std::span<const Tensor> inputs,
                                                       StreamHandle stream) const {
  if (inputs.size() != input_dim_orders_.size())
    return set_error(Error::InvalidArgument, "method '" + name_ + "' takes " +
                                                 std::to_string(input_dim_orders_.size()) + " inputs, got " +
                                                 std::to_string(inputs.size()));
  std::vector<Tensor> out;
  out.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const std::span<const uint8_t> order = input_dim_orders_[i];
    const bool laid_out = has_dense_layout(t.sizes(), t.strides(), order);
    const bool misaligned = misaligned_on_device(t);
    if (laid_out && !misaligned) {
      if (has_exact_dense_strides(t.sizes(), t.strides(), order)) out.push_back(t);
      else  // only size-1 dimensions differ: the same memory, with the compiled strides
        out.emplace_back(t.storage(), t.dtype(), t.sizes(), dense_strides(t.sizes(), order), t.storage_offset());
      continue;
    }
    if (mutated_inputs_.count(i)) {
      // A copy would take the method's writes and drop them after the call.
      std::string why;
      if (!laid_out) {
        why = " has strides " + strides_text(t.strides()) + " but the method was compiled for " +
              describe_dim_order(order) + " strides " + strides_text(dense_strides(t.sizes(), order)) +
              " (sizes " + strides_text(t.sizes()) + ")";
      } else {
        why = " starts at " +
              std::to_string(reinterpret_cast<uintptr_t>(t.data_ptr()) % kDeviceInputAlignment) +
              " bytes past a 16-byte boundary, and the compiled kernels assume aligned device inputs";
      }
      return set_error(
          Error::InvalidArgument,
          input_label(name_, i, input_names_) + why +
              "; the method writes this input in place, so Kiln cannot run it on a copy: the writes "
              "would go to the copy and be lost. Pass a tensor in the compiled layout (e.g. allocated "
              "contiguous, not a view) and keep it across calls");
    }
    auto copy = relayout(t, order, stream);
    if (!copy.ok())
      return set_error(copy.error(),
                       input_label(name_, i, input_names_) + ": copying it (strides " +
                           strides_text(t.strides()) + ") into the " + describe_dim_order(order) +
                           " layout the method was compiled for failed: " + last_error_message());
    out.push_back(std::move(*copy));
  }
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

Result<std::vector<Tensor>> AotiMethod::run_model(std::vector<Tensor> staged, StreamHandle stream) {
  // Input handles are stolen by the container: give it fresh handles that
  // share the caller's storage (or the device copy's), so the caller's
  // tensors stay untouched.
  std::vector<AtenTensorHandle> input_handles;
  input_handles.reserve(staged.size());
  for (Tensor& t : staged) input_handles.push_back(new_handle(std::move(t)));
  staged.clear();
  std::vector<AtenTensorHandle> output_handles(num_outputs_, nullptr);

  clear_error();
  (void)take_check_failure();  // stale state from an earlier call on this thread
  (void)take_out_of_memory();
  const uint64_t checks_before = check_failure_count();
  // With graphs the container holds one model instance and calls are
  // serialised by graph_mutex_: the single-threaded entry skips the
  // container's own bookkeeping (an event per run), which a recording could
  // not hold.
  const auto entry = graphs_ && entry_.run_single_threaded ? entry_.run_single_threaded : entry_.run;
  AOTIRuntimeError status = 0;
  {
    MemoryBudgetScope budget_scope(budget_.get());
    const RandomScope random_scope(random_.get());
    const cpu::OpenmpThreads::Scope threads(openmp_, num_threads_);
    status = entry(container_, input_handles.data(), input_handles.size(), output_handles.data(),
                   output_handles.size(), stream, nullptr);
  }
  std::vector<Tensor> outputs;
  outputs.reserve(num_outputs_);
  for (size_t i = 0; i < output_handles.size(); ++i) {
    AtenTensorHandle handle = output_handles[i];
    // A library may put one handle in two slots (a tensor returned twice, as
    // a .pt2 package can): the later slot shares the earlier tensor, and the
    // handle is deleted once.
    const auto first = std::find(output_handles.begin(), output_handles.begin() + static_cast<std::ptrdiff_t>(i), handle);
    if (handle && first != output_handles.begin() + static_cast<std::ptrdiff_t>(i)) {
      outputs.push_back(outputs[static_cast<size_t>(first - output_handles.begin())]);
      continue;
    }
    if (Tensor* t = from_handle(handle)) outputs.push_back(*t);
    else outputs.emplace_back();
    delete_handle(handle);
  }
  // A failed aoti_torch_check cannot stop the model from inside the hook; the
  // run is reported as failed here instead, also when the check failed on one
  // of the kernels' OpenMP workers (counted process-wide).
  const bool failed_here = take_check_failure();
  const bool check_failed = failed_here || check_failure_count() != checks_before;
  if (check_failed && !failed_here) set_error(Error::BackendFailed, last_check_failure_message());
  if (status != 0 || check_failed) return backend_failure("method '" + name_ + "': running the model");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      return set_error(Error::BackendFailed, "method '" + name_ + "': output " + std::to_string(i) + " is missing");
  return outputs;
}

Result<std::vector<Tensor>> AotiMethod::finish_device_outputs(std::vector<Tensor> outputs, bool any_device_input,
                                                              StreamHandle stream) {
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

Result<std::vector<Tensor>> AotiMethod::stage_inputs(std::vector<Tensor> inputs, StreamHandle stream) const {
  if (device_.is_cpu()) return inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].device() == device_) continue;
    auto copy = to_device(inputs[i], stream);
    if (!copy.ok())
      return set_error(copy.error(), input_label(name_, i, input_names_) + ": copying it to " +
                                         device_string(device_) + " failed: " + last_error_message());
    inputs[i] = std::move(*copy);
  }
  return inputs;
}

Result<std::vector<Tensor>> AotiMethod::execute(std::span<const Tensor> inputs) {
  const bool on_device = !device_.is_cpu();
  StreamHandle stream = nullptr;
  if (on_device) {
    if (stream_policy_ == StreamPolicy::PerThread) {
      auto own = OwnedStream::for_this_thread(iface_, device_.index);
      if (!own.ok()) return set_error(own.error(), "method '" + name_ + "': " + last_error_message());
      stream = *own;
    } else {
      stream = stream_policy_ == StreamPolicy::Caller || !stream_ ? iface_->current_stream(device_.index)
                                                                   : stream_->get();
    }
  }

  bool any_device_input = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (on_device && t.device().is_cpu() && mutated_inputs_.count(i))
      return set_error(Error::InvalidArgument,
                       input_label(name_, i, input_names_) + " is written in place by the method, so it must be on " +
                           device_string(device_) + ": a CPU tensor would be copied over and the writes lost "
                                                    "(allocate it on the device once and pass it on every call)");
    if (!on_device || t.device().is_cpu()) continue;
    if (t.device() != device_)
      return set_error(Error::InvalidArgument, input_label(name_, i, input_names_) + " is on " +
                                                   device_string(t.device()) + " but the method runs on " +
                                                   device_string(device_) +
                                                   " (move it there, or load the method with aoti.device_index=" +
                                                   std::to_string(t.device().index) + ")");
    any_device_input = true;
  }

  // Before anything else runs: the graphs below key their recordings and
  // static input buffers by these tensors' geometry, so they only ever see
  // the compiled layouts.
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> conformed, conform_inputs(inputs, stream));

  if (graphs_) {
    std::lock_guard<std::mutex> lock(graph_mutex_);
    auto run = [&](std::span<const Tensor> run_inputs, StreamHandle on) -> Result<std::vector<Tensor>> {
      KILN_ASSIGN_OR_RETURN(std::vector<Tensor> staged,
                            stage_inputs(std::vector<Tensor>(run_inputs.begin(), run_inputs.end()), on));
      return run_model(std::move(staged), on);
    };
    auto outputs = graphs_->execute(conformed, stream, run);
    if (!outputs.ok()) {
      if (outputs.error() == Error::BackendFailed) return outputs.error();  // already names the method
      return set_error(outputs.error(), "method '" + name_ + "': " + last_error_message());
    }
    return finish_device_outputs(std::move(*outputs), any_device_input, stream);
  }

  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> staged, stage_inputs(std::move(conformed), stream));
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_model(std::move(staged), stream));
  if (!on_device) return outputs;
  return finish_device_outputs(std::move(outputs), any_device_input, stream);
}

}  // namespace kiln::aoti
