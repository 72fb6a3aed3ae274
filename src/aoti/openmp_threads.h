// OpenmpThreads: the OpenMP thread count a CPU model library's kernels run with.
//
// Kiln exports CPU kernels with Inductor's cpp.dynamic_threads: each kernel
// opens `#pragma omp parallel` without a num_threads clause and sizes its
// per-thread buffers with omp_get_max_threads(). That value is an OpenMP ICV
// kept per thread, so the count must be set on the thread that runs the model,
// for each call, and given back afterwards so the caller's own OpenMP code on
// that thread is unaffected. The OpenMP functions are looked up through the
// library's handle, so they are those of the OpenMP runtime the library is
// bound to (libgomp; an OpenMP build of OpenBLAS, which the CPU matrix ops
// use, shares it and follows the same count).
//
// Ownership: holds function pointers into a library the caller keeps loaded.
#pragma once

#include "aoti/aoti_library.h"

namespace kiln::aoti {

/// CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus() noexcept;

class OpenmpThreads {
 public:
  /// The library's OpenMP functions; inactive when it links no OpenMP runtime.
  static OpenmpThreads resolve(const AotiLibrary& library) noexcept;

  bool active() const noexcept { return set_ != nullptr; }

  /// While alive, the calling thread's OpenMP thread count is `threads`; the
  /// previous count comes back on destruction. Inactive: does nothing.
  class Scope {
   public:
    Scope(const OpenmpThreads& omp, int threads) noexcept;
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    void (*set_)(int) = nullptr;
    int previous_ = 0;
  };

 private:
  void (*set_)(int) = nullptr;
  int (*get_)() = nullptr;
};

}  // namespace kiln::aoti
