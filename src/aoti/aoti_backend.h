// The "aoti" backend: runs methods compiled by AOTInductor.
//
// Options (all optional; unknown keys and wrong types are refused by name):
//   device_index (int)   which device of the method's type to run on (default:
//                        the index the program names, normally 0). The
//                        container is created on it ("cuda:N") and CPU inputs
//                        are copied there.
//   num_models   (int)   model instances in the container, i.e. how many
//                        execute() calls may run at once (default 1)
//   stream       (string) device methods only (CUDA); ignored on CPU:
//                   "per_method" (default) each loaded method has its own
//                        stream, created at load on its device and destroyed
//                        at unload; execute synchronises it before returning.
//                   "shared"  one stream per loaded program (Module) and
//                        device, shared by its methods; same synchronisation.
//                   "caller"  execute runs on the calling thread's current
//                        stream (kiln::cuda::set_current_stream / StreamGuard;
//                        null = legacy default stream) and does not
//                        synchronise device outputs: they are ordered on that
//                        stream, like any work the caller queues there.
//                   "per_thread" each calling thread runs on a stream of its
//                        own (created at its first call, destroyed when the
//                        thread exits); with num_models > 1, threads calling
//                        one method run on the GPU concurrently. Synchronised
//                        like per_method.
//   keep_outputs_on_device (bool) device methods: return outputs on the device
//                        even when every input was a CPU tensor (default
//                        false: outputs are copied to the host then, and stay
//                        on the device when any input was a device tensor).
//   max_memory_bytes (int >= 1) the method's memory limit: its weights plus
//                        every tensor the model creates while it loads or
//                        runs (outputs count until the caller frees them).
//                        Past it, load/execute fail with OutOfMemory and the
//                        method stays usable (memory_budget.h). Default: none.
//   cuda_graphs  (bool)  CUDA methods: after one eager warm-up run per input
//                        signature (dtype, sizes, strides), record the run into
//                        a CUDA graph and replay it for later calls with that
//                        signature (graph_replay.h); calls are serialised.
//                        Signatures that cannot be recorded run eagerly (a
//                        warning says why). Default false.
//   cuda_graph_cache_size (int) graphs kept per method, least recently used
//                        dropped first (default 8)
//   weights      (string) "kiln": when the program has a weights table,
//                        Kiln places the weights (device_weights.h: bulk
//                        overlapped upload on CUDA, views of the weights blob
//                        on CPU, shared between the methods of a program);
//                        "library": the library copies its blob itself;
//                        "auto" (default): kiln wherever the program has a
//                        weights table, else library.
//   verify_weights (bool) check the weights blob's SHA-256 before use
//                        (default true; false skips hashing large blobs)
//   num_threads  (int)   OpenMP threads the library's CPU kernels and the CPU
//                        fallback ops (GEMMs, attention) run with, set on the
//                        calling thread for each
//                        execute (default: the CPUs available to the process,
//                        sched_getaffinity). Libraries exported before Kiln
//                        used dynamic threads keep their baked-in count.
#pragma once

#include "runtime/backend.h"

namespace kiln::aoti {

class AotiBackend final : public Backend {
 public:
  std::string_view name() const noexcept override { return "aoti"; }
  Error validate_options(const BackendOptions& options) const override;
  Result<std::unique_ptr<MethodExecutor>> load_method(Runtime::State& runtime, std::shared_ptr<const ProgramFile> program,
                                                      const MethodInfo& method,
                                                      const BackendOptions& options) override;
  static AotiBackend& instance();
};

}  // namespace kiln::aoti
