// AotiMethod: one method of a program, loaded: its library, its AOTInductor
// model container (with weights on the device), and how to run it.
//
// Ownership: owns the container (deleted before the library is closed) and the
// library; keeps the ProgramFile alive; shares its stream (per_method: owns it
// alone; shared: with the other methods of its program). execute() may be
// called from several threads: the container hands each concurrent call its
// own model instance (up to num_models) and queues the rest.
//
// Device methods (CUDA): CPU inputs are copied to the method's device on the
// run's stream; outputs are copied back to the host unless an input was a
// device tensor or keep_outputs_on_device is set (aoti_backend.h has the
// option rules). Device inputs must already be on the method's device index.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aoti/aoti_library.h"
#include "aoti/entry_points.h"
#include "aoti/openmp_threads.h"
#include "kiln/device.h"
#include "kiln/device_interface.h"
#include "runtime/backend.h"

namespace kiln::aoti {

enum class StreamPolicy { PerMethod, Shared, Caller };

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
  size_t num_models = 1;
  StreamPolicy stream_policy = StreamPolicy::PerMethod;
  bool keep_outputs_on_device = false;
  /// OpenMP threads the library's CPU kernels (and OpenMP BLAS) run with on the
  /// calling thread; 0: the CPUs available to the process.
  int num_threads = 0;
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
  // CPU input -> a new device tensor with the same values, copied on `stream`.
  Result<Tensor> to_device(const Tensor& input, StreamHandle stream) const;
  // Device output -> a host tensor with the same geometry (synchronises `stream`).
  Result<Tensor> to_host(const Tensor& output, StreamHandle stream) const;

  std::shared_ptr<const ProgramFile> program_;
  std::string name_;
  std::vector<std::string> input_names_;
  Device device_;
  DeviceInterface* iface_ = nullptr;  // registered devices are static objects
  StreamPolicy stream_policy_ = StreamPolicy::PerMethod;
  bool keep_outputs_on_device_ = false;
  // Declared before the container handle's owner fields so it is destroyed
  // after the container (members are destroyed in reverse order).
  std::shared_ptr<OwnedStream> stream_;
  std::unique_ptr<AotiLibrary> library_;
  EntryPoints entry_;
  ContainerHandle container_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_outputs_ = 0;
  OpenmpThreads openmp_;
  int num_threads_ = 1;
};

}  // namespace kiln::aoti
