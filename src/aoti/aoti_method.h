// AotiMethod: one method of a program, loaded: its library, its AOTInductor
// model container (with weights on the device), and how to run it.
//
// Ownership: owns the container (deleted before the library is closed) and the
// library; keeps the ProgramFile alive; shares its stream (per_method: owns it
// alone; shared: with the other methods of its program). execute() may be
// called from several threads: the container hands each concurrent call its
// own model instance (up to num_models) and queues the rest.
//
// Inputs of any layout: every input whose strides differ from the layout the
// library was compiled for (TensorSpec::dim_order, runtime/input_layout.h) is
// first copied into that layout, on the method's device (CUDA: also a device
// input that is not 16-byte aligned); an input already in it is used as it is.
// Inputs the method writes in place are never copied: a mismatch is refused.
//
// Device methods (CUDA): CPU inputs are copied to the method's device on the
// run's stream; outputs are copied back to the host unless an input was a
// device tensor or keep_outputs_on_device is set (aoti_backend.h has the
// option rules). Device inputs must already be on the method's device index.
// With aoti.cuda_graphs, calls are serialised and replayed from CUDA graphs
// (graph_replay.h).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aoti/aoti_library.h"
#include "aoti/device_weights.h"
#include "aoti/entry_points.h"
#include "shims/common/memory_budget.h"
#include "shims/common/random_source.h"
#include "aoti/graph_replay.h"
#include "aoti/kernel_directory.h"
#include "devices/cpu/openmp_threads.h"
#include "aoti/weight_placement.h"
#include "kiln/device.h"
#include "core/device_interface.h"
#include "runtime/backend.h"

namespace kiln::aoti {

enum class StreamPolicy { PerMethod, Shared, Caller, PerThread };

/// A device stream Kiln created, destroyed with the last reference. Thread-safe
/// to share; the stream itself follows the device's rules.
class OwnedStream {
 public:
  /// A new stream on device `index` of `device`.
  static Result<std::shared_ptr<OwnedStream>> create(DeviceInterface* device, int index);
  /// The stream shared by the methods of `program` on device `index`: the live
  /// one if any method still holds it, else a new one. The registry keeps only
  /// weak references, so the stream goes with the last method using it. A live
  /// entry keeps its program alive (methods hold the program), so a program's
  /// address is never mistaken for another's.
  static Result<std::shared_ptr<OwnedStream>> shared_for(const void* program, DeviceInterface* device, int index);
  /// The calling thread's own stream on device `index`, created on its first
  /// use and destroyed when the thread exits (shared by every method the
  /// thread runs there).
  static Result<StreamHandle> for_this_thread(DeviceInterface* device, int index);
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  StreamHandle get() const noexcept { return stream_; }

 private:
  OwnedStream(DeviceInterface* device, int index, StreamHandle stream)
      : device_(device), index_(index), stream_(stream) {}
  DeviceInterface* device_;
  int index_;
  StreamHandle stream_;
};

struct AotiMethodConfig {
  Device device;
  /// The device's interface, from the module's runtime.
  DeviceInterface* device_interface = nullptr;
  size_t num_models = 1;
  StreamPolicy stream_policy = StreamPolicy::PerMethod;
  bool keep_outputs_on_device = false;
  /// aoti.max_memory_bytes: the method's memory budget (memory_budget.h); 0 = none.
  size_t max_memory_bytes = 0;
  /// Replay CUDA graphs per input signature (graph_replay.h), keeping at most
  /// cuda_graph_cache_size of them.
  bool cuda_graphs = false;
  /// Kiln places the weights itself when the program has a weights table
  /// (device_weights.h); false: the library loads its blob.
  bool kiln_places_weights = true;
  /// Check the weights blob's SHA-256 before use (the library's always is).
  bool verify_weights = true;
  size_t cuda_graph_cache_size = 8;
  /// OpenMP threads the library's CPU kernels (and OpenMP BLAS) run with on the
  /// calling thread; 0: the CPUs available to the process.
  int num_threads = 0;
  /// Key of the method's random ops (random_source.h); unset: a seed from the
  /// operating system's entropy, different in every load.
  std::optional<uint64_t> seed;
  /// The run stream for PerMethod / Shared device methods (null otherwise).
  std::shared_ptr<OwnedStream> stream;
};

class AotiMethod final : public MethodExecutor {
 public:
  static Result<std::unique_ptr<AotiMethod>> load(std::shared_ptr<const ProgramFile> program,
                                                  const MethodInfo& method, const AotiMethodConfig& config);
  ~AotiMethod() override;

  Result<std::vector<Tensor>> execute(std::span<const Tensor> inputs) override;

  /// The OpenMP thread count each execute() runs the library with.
  int num_threads() const noexcept { return num_threads_; }

  /// The stream this method runs on when the policy is not Caller (null for
  /// CPU methods). For tests and diagnostics.
  StreamHandle owned_stream() const noexcept { return stream_ ? stream_->get() : nullptr; }

 private:
  AotiMethod() = default;
  // CPU input already in its compiled layout -> a new device tensor with the
  // same values and strides, copied on `stream`.
  Result<Tensor> to_device(const Tensor& input, StreamHandle stream) const;
  // Every input in the layout the library was compiled for, where it is: the
  // caller's tensor when it already is (CUDA: and is aligned), else a copy on
  // its own device (a device copy is queued on `stream`). InvalidArgument for
  // an input the method writes in place that would need a copy.
  Result<std::vector<Tensor>> conform_inputs(std::span<const Tensor> inputs, StreamHandle stream) const;
  // A copy of `input` dense in `dim_order`, on the input's device.
  Result<Tensor> relayout(const Tensor& input, std::span<const uint8_t> dim_order, StreamHandle stream) const;
  // Device output -> a host tensor with the same geometry (synchronises `stream`).
  Result<Tensor> to_host(const Tensor& output, StreamHandle stream) const;
  // Starts placing the weights from the method's weights table (null when the
  // program has none: the library loads its blob).
  Result<std::unique_ptr<WeightPlacement>> start_placing_weights(const MethodInfo& method, WeightsSource blob,
                                                                 uint64_t blob_size,
                                                                 const std::string& label);
  // Lends the placed weights to the container; false (nothing done) when the
  // library cannot take them.
  Result<bool> hand_placed_weights(WeightPlacement& placement, const std::string& label);
  // The library copies its weights blob itself.
  Error load_weights_blob(std::span<const uint8_t> weights, const std::string& label);
  // The inputs (already in their compiled layouts) where the model wants
  // them: CPU inputs of a device method are copied to its device on `stream`;
  // everything else is passed as it is.
  Result<std::vector<Tensor>> stage_inputs(std::vector<Tensor> inputs, StreamHandle stream) const;
  // One run of the container on inputs already where the model wants them.
  Result<std::vector<Tensor>> run_model(std::vector<Tensor> staged, StreamHandle stream);
  // Device methods: synchronise, or copy outputs to the host (option rules).
  Result<std::vector<Tensor>> finish_device_outputs(std::vector<Tensor> outputs, bool any_device_input,
                                                    StreamHandle stream);

  std::shared_ptr<const ProgramFile> program_;
  std::string name_;
  std::vector<std::string> input_names_;
  // The layout the library reads each input in (TensorSpec::dim_order; empty:
  // row-major).
  std::vector<std::vector<uint8_t>> input_dim_orders_;
  // Inputs the compiled code writes in place (metadata `mutated_inputs`): on a
  // device method they must already be on its device, and they turn CUDA
  // graphs off (a replay would not pass the writes on).
  std::set<size_t> mutated_inputs_;
  Device device_;
  DeviceInterface* iface_ = nullptr;  // registered devices are static objects
  StreamPolicy stream_policy_ = StreamPolicy::PerMethod;
  bool keep_outputs_on_device_ = false;
  // Declared before the container handle's owner fields so it is destroyed
  // after the container (members are destroyed in reverse order).
  std::shared_ptr<OwnedStream> stream_;
  std::shared_ptr<MemoryBudget> budget_;  // null: no limit
  size_t weights_charged_ = 0;
  std::unique_ptr<AotiLibrary> library_;
  // Kernel files the library loads lazily (null when they are embedded).
  std::unique_ptr<KernelDirectory> kernels_;
  EntryPoints entry_;
  ContainerHandle container_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  // Weights placed by Kiln: the store keeps them, the handles lend them to the
  // container (which never frees them); both go after the container.
  std::shared_ptr<WeightStore> weights_;
  std::vector<AtenTensorHandle> constant_handles_;
  // Handles the container itself made to those weights (it never deletes them).
  std::vector<AtenTensorHandle> container_constant_handles_;
  // Declared after container_: destroyed before it (the destructor also
  // resets it first, explicitly).
  std::unique_ptr<GraphReplay> graphs_;
  std::mutex graph_mutex_;  // serialises execute() when graphs_ is set
  cpu::OpenmpThreads openmp_;
  int num_threads_ = 1;
  // What the library's random fallbacks (and Inductor's seeds) draw from.
  std::unique_ptr<RandomSource> random_;
};

}  // namespace kiln::aoti
