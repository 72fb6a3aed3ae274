// GraphReplay: CUDA-graph execution of one loaded method (aoti option
// cuda_graphs). The method hands it inputs already laid out as it was
// compiled (dense, aligned on the device: AotiMethod::conform_inputs), so a
// static input buffer with an input's strides is what the recorded kernels
// read, and the bytes from an input's first element to its last are all a
// replay copies in. Inputs the method writes in place (a KV cache) are the
// exception: they are bound by address instead of copied. The recording reads
// and writes the caller's own buffer, the buffer's address is part of the
// signature, and a replay therefore only ever runs on the buffer it was
// recorded against; another buffer (or another geometry) is a new signature,
// with its own warm-up and recording. Nothing of a bound buffer is kept, so
// the caller stays its owner: a freed buffer is simply never passed again (a
// new one that happens to take its address and geometry is the same storage
// to the recorded kernels, so replaying on it is right).
// For each input signature (dtype, sizes, strides of every input, and the
// address of every bound one) the method first runs eagerly once (warm-up: lazy kernel loading,
// library handles and algorithm caches happen there, outside any recording),
// then one run is recorded into a graph against static input buffers, and
// later calls with that signature copy their inputs into those buffers,
// replay the graph and copy the outputs out. The outputs a caller gets are
// always fresh tensors, so a replay never overwrites what an earlier call
// returned.
//
// The run's stream is recorded when the device allows it; a default stream
// (which CUDA cannot record: stream=caller from a thread on the legacy default
// stream, torch's usual case) is recorded through a side stream of the
// replayer's own instead, and the graph is replayed on the run's stream, which
// CUDA does allow.
//
// A signature whose recording fails (the model does something a graph cannot
// hold) is remembered and runs
// eagerly from then on; the reason is logged once as a warning. At most
// `capacity` graphs are kept; the least recently used one is dropped first.
//
// Ownership: owns its graphs (through the device interface) and their static
// input buffers and recorded outputs, which point into the graphs' memory and
// are dropped before the graphs. Not thread-safe: the method serialises calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "core/device_interface.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

class GraphReplay {
 public:
  /// One eager run of the method (its input staging and single-threaded run)
  /// on `inputs`, which may be on the host or on the method's device, queued
  /// on `stream`.
  using RunFn = std::function<Result<std::vector<Tensor>>(std::span<const Tensor> inputs, StreamHandle stream)>;

  /// `bound_inputs`: indices of the inputs the method writes in place; they
  /// must be device tensors in the compiled layout (AotiMethod checks that).
  GraphReplay(DeviceInterface* device, Device where, size_t capacity, std::string method_label,
              std::vector<bool> bound_inputs);
  ~GraphReplay();
  GraphReplay(const GraphReplay&) = delete;
  GraphReplay& operator=(const GraphReplay&) = delete;

  /// Executes `inputs` (each on the host or on the method's device) on
  /// `stream`: replays the signature's graph, or runs `run` eagerly (warm-up,
  /// or signatures that cannot be recorded), or records a graph and replays
  /// it. Outputs are on the device, ordered on `stream`.
  Result<std::vector<Tensor>> execute(std::span<const Tensor> inputs, StreamHandle stream, const RunFn& run);

 private:
  struct Graph {
    GraphHandle handle = nullptr;
    // One per input; undefined for a bound input (the caller's buffer is used).
    std::vector<Tensor> static_inputs;
    std::vector<Tensor> recorded_outputs;
  };
  struct SignatureState {
    unsigned eager_runs = 0;
    bool eager_only = false;
  };

  std::string signature_of(std::span<const Tensor> inputs) const;
  bool is_bound(size_t input) const noexcept { return input < bound_.size() && bound_[input]; }
  // A device buffer with `like`'s sizes and strides, allocated on `stream`.
  // Static inputs are freed on `stream`, which outlives them. Buffers handed
  // to the caller are freed on whatever stream is current when their last
  // reference goes, like the outputs the model allocates itself: the caller
  // may keep them after the method (and its stream) is gone.
  enum class FreeOn { RunStream, CurrentStream };
  Result<Tensor> device_buffer_like(const Tensor& like, StreamHandle stream, FreeOn free_on) const;
  // Copies `src`'s bytes (host or device, same geometry) into `dst` on `stream`.
  Error copy_into(const Tensor& dst, const Tensor& src, StreamHandle stream) const;
  Result<std::vector<Tensor>> replay(Graph& graph, std::span<const Tensor> inputs, StreamHandle stream);
  // Records one run; on failure returns the reason (and nothing is kept).
  Result<Graph> record(std::span<const Tensor> inputs, StreamHandle stream, const RunFn& run);
  void drop(Graph& graph) noexcept;
  // The stream a recording for a run on `stream` is made on: `stream` itself,
  // or (when the device cannot record it) recording_stream_, made on first use.
  Result<StreamHandle> recording_stream_for(StreamHandle stream);

  DeviceInterface* device_;
  Device where_;
  size_t capacity_;
  std::string label_;
  std::vector<bool> bound_;
  std::map<std::string, Graph> graphs_;
  std::list<std::string> recency_;  // front: most recently used signature with a graph
  std::map<std::string, SignatureState> signatures_;
  // Owned; destroyed after the graphs (null until a default stream is recorded).
  StreamHandle recording_stream_ = nullptr;
};

}  // namespace kiln::aoti
