#include "aoti/graph_replay.h"

#include <algorithm>
#include <utility>

#include "kiln/log.h"

namespace kiln::aoti {
namespace {
// Eager runs of a signature before it is recorded.
constexpr unsigned kWarmupRuns = 1;
// Signatures remembered without a graph (warm-up counts, eager-only marks);
// past this, the ones without a graph are forgotten, so endless new shapes
// cannot grow the table.
constexpr size_t kMaxSignatures = 4096;
}  // namespace

GraphReplay::GraphReplay(DeviceInterface* device, Device where, size_t capacity, std::string method_label,
                         std::vector<bool> bound_inputs)
    : device_(device),
      where_(where),
      capacity_(std::max<size_t>(capacity, 1)),
      label_(std::move(method_label)),
      bound_(std::move(bound_inputs)) {}

GraphReplay::~GraphReplay() {
  for (auto& [key, graph] : graphs_) drop(graph);
  device_->destroy_stream(where_.index, recording_stream_);
}

Result<StreamHandle> GraphReplay::recording_stream_for(StreamHandle stream) {
  if (device_->stream_capturable(where_.index, stream)) return stream;
  if (!recording_stream_) {
    auto created = device_->create_stream(where_.index);
    if (!created.ok()) return set_error(created.error(), "creating a stream to record on: " + last_error_message());
    recording_stream_ = *created;
  }
  return recording_stream_;
}

void GraphReplay::drop(Graph& graph) noexcept {
  // The recorded outputs and static inputs point into memory the graph owns or
  // uses: release them before the graph.
  graph.recorded_outputs.clear();
  graph.static_inputs.clear();
  device_->destroy_graph(where_.index, graph.handle);
  graph.handle = nullptr;
}

std::string GraphReplay::signature_of(std::span<const Tensor> inputs) const {
  std::string key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (is_bound(i)) key += '@' + std::to_string(reinterpret_cast<uintptr_t>(t.data_ptr()));
    key += std::to_string(static_cast<int>(t.dtype()));
    key += '[';
    for (int64_t s : t.sizes()) key += std::to_string(s) + ',';
    key += '|';
    for (int64_t s : t.strides()) key += std::to_string(s) + ',';
    key += ']';
  }
  return key;
}

Result<Tensor> GraphReplay::device_buffer_like(const Tensor& like, StreamHandle stream, FreeOn free_on) const {
  KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(like.sizes(), like.strides(), like.dtype()));
  const size_t nbytes = extent > 0 ? static_cast<size_t>(extent) : 1;
  KILN_ASSIGN_OR_RETURN(void* data, device_->allocate(nbytes, where_.index, stream));
  DeviceInterface* device = device_;
  const int index = where_.index;
  const StreamHandle free_stream = free_on == FreeOn::RunStream ? stream : nullptr;
  StoragePtr storage = Storage::create(data, nbytes, where_, [device, index, free_stream](void* p) {
    device->free(p, index, free_stream);
  });
  return Tensor(std::move(storage), like.dtype(), like.sizes(), like.strides());
}

Error GraphReplay::copy_into(const Tensor& dst, const Tensor& src, StreamHandle stream) const {
  KILN_ASSIGN_OR_RETURN(int64_t extent, strided_extent_bytes(src.sizes(), src.strides(), src.dtype()));
  if (extent == 0) return Error::Ok;
  const CopyKind kind = src.device().is_cpu() ? CopyKind::HostToDevice : CopyKind::DeviceToDevice;
  return device_->copy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(extent), kind, where_.index, stream);
}

Result<std::vector<Tensor>> GraphReplay::replay(Graph& graph, std::span<const Tensor> inputs, StreamHandle stream) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (graph.static_inputs[i].defined()) KILN_RETURN_IF_ERROR(copy_into(graph.static_inputs[i], inputs[i], stream));
  KILN_RETURN_IF_ERROR(device_->launch_graph(where_.index, graph.handle, stream));
  std::vector<Tensor> outputs;
  outputs.reserve(graph.recorded_outputs.size());
  for (const Tensor& recorded : graph.recorded_outputs) {
    KILN_ASSIGN_OR_RETURN(Tensor out, device_buffer_like(recorded, stream, FreeOn::CurrentStream));
    KILN_RETURN_IF_ERROR(copy_into(out, recorded, stream));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

Result<GraphReplay::Graph> GraphReplay::record(std::span<const Tensor> inputs, StreamHandle stream,
                                               const RunFn& run) {
  Graph graph;
  // What the recorded run reads: the static buffers, and bound inputs as they are.
  std::vector<Tensor> recorded_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (is_bound(i)) {
      if (inputs[i].device() != where_)
        return set_error(Error::InvalidArgument, "input " + std::to_string(i) + " is written in place and must be on " +
                                                     device_string(where_) + " to be recorded");
      graph.static_inputs.emplace_back();
      recorded_inputs.push_back(inputs[i]);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor buffer, device_buffer_like(inputs[i], stream, FreeOn::RunStream));
    graph.static_inputs.push_back(buffer);
    recorded_inputs.push_back(std::move(buffer));
  }
  // Nothing runs while recording, so the recording stream needs no ordering
  // with `stream`: the replays are queued on `stream` itself.
  KILN_ASSIGN_OR_RETURN(StreamHandle recording, recording_stream_for(stream));
  KILN_RETURN_IF_ERROR(device_->begin_capture(where_.index, recording));
  auto outputs = run(recorded_inputs, recording);
  const std::string run_error = outputs.ok() ? std::string() : last_error_message();
  auto handle = device_->end_capture(where_.index, recording);
  if (!outputs.ok()) {
    if (handle.ok()) device_->destroy_graph(where_.index, *handle);
    return set_error(outputs.error(), "the model failed while being recorded: " + run_error);
  }
  if (!handle.ok()) return handle.error();
  graph.handle = *handle;
  for (const Tensor& out : *outputs) {
    if (!out.defined() || out.device() != where_) {
      drop(graph);
      return set_error(Error::NotSupported, "an output is not on " + device_string(where_) +
                                                ", so a replay could not refresh it");
    }
  }
  graph.recorded_outputs = std::move(*outputs);
  return graph;
}

Result<std::vector<Tensor>> GraphReplay::execute(std::span<const Tensor> inputs, StreamHandle stream,
                                                 const RunFn& run) {
  const std::string key = signature_of(inputs);
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    recency_.remove(key);
    recency_.push_front(key);
    return replay(it->second, inputs, stream);
  }

  if (signatures_.size() >= kMaxSignatures)
    std::erase_if(signatures_, [&](const auto& entry) { return !graphs_.contains(entry.first); });
  SignatureState& state = signatures_[key];
  if (state.eager_only || state.eager_runs < kWarmupRuns) {
    ++state.eager_runs;
    return run(inputs, stream);
  }

  auto recorded = record(inputs, stream, run);
  if (!recorded.ok()) {
    // Runs eagerly from now on; the eager run below also reports a genuine
    // model failure the way a method without graphs would.
    state.eager_only = true;
    KILN_LOG(Warning, label_ + ": running without a CUDA graph for input signature " + key +
                          ": capture failed: " + last_error_message());
    return run(inputs, stream);
  }
  if (graphs_.size() >= capacity_) {
    const std::string oldest = recency_.back();
    recency_.pop_back();
    drop(graphs_.at(oldest));
    graphs_.erase(oldest);
  }
  Graph& graph = graphs_.emplace(key, std::move(*recorded)).first->second;
  recency_.push_front(key);
  return replay(graph, inputs, stream);
}

}  // namespace kiln::aoti
