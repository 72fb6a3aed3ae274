// OpenmpThreads: the OpenMP thread count a CPU model library's kernels run
// with, and the team Kiln's CPU fallback ops share with those kernels.
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
// While a call runs, its Scope also publishes the runtime and count to the
// calling thread (OpenmpThreads::current()). The CPU fallback ops the model
// calls back into read it to open their parallel regions in the same
// runtime, with the same worker threads, as the generated kernels: no second
// thread pool competes with OpenMP's (spinning) workers for the CPUs.
//
// Ownership: holds function pointers into a library the caller keeps loaded.
#pragma once

namespace kiln::cpu {

/// CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus() noexcept;

class OpenmpThreads {
 public:
  /// The OpenMP functions `lookup(name)` finds (through a model library's
  /// handle: those of the runtime it is bound to); inactive when there are
  /// none.
  template <typename Lookup>
  static OpenmpThreads resolve_with(Lookup lookup) noexcept;
  /// The same, looked up with dlsym through a dlopen handle (tests use libgomp's own).
  static OpenmpThreads resolve_handle(void* handle) noexcept;

  bool active() const noexcept { return set_ != nullptr; }
  /// Whether parallel regions can be opened (GOMP_parallel was found as well).
  bool can_fork() const noexcept { return parallel_ != nullptr; }

  /// Runs fn(data) on every thread of a new team of `threads` threads (the
  /// calling thread is thread 0) and returns when all have finished. The
  /// runtime may give fewer threads (e.g. when nested); team_size() and
  /// thread_num() inside fn say how many and which. Requires can_fork().
  void fork(void (*fn)(void*), void* data, int threads) const noexcept;
  /// Inside fork's fn: the team's size and this thread's number in it.
  int team_size() const noexcept { return num_threads_(); }
  int thread_num() const noexcept { return thread_num_(); }

  /// While alive, the calling thread's OpenMP thread count is `threads`; the
  /// previous count comes back on destruction. Also makes this runtime and
  /// count the calling thread's current() until destruction. Inactive: only
  /// current() changes (to none).
  class Scope {
   public:
    Scope(const OpenmpThreads& omp, int threads) noexcept;
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    void (*set_)(int) = nullptr;
    int previous_ = 0;
    const OpenmpThreads* previous_current_ = nullptr;
    int previous_current_threads_ = 1;
  };

  /// The runtime of the model call running on this thread (innermost Scope)
  /// when it can fork, else null; `threads` receives that call's count (1
  /// when null).
  static const OpenmpThreads* current(int* threads) noexcept;

 private:
  void (*set_)(int) = nullptr;
  int (*get_)() = nullptr;
  // GOMP_parallel: the entry point compilers emit for `#pragma omp parallel`
  // (libgomp's ABI, also provided by LLVM's libomp).
  void (*parallel_)(void (*)(void*), void*, unsigned, unsigned) = nullptr;
  int (*num_threads_)() = nullptr;
  int (*thread_num_)() = nullptr;
};

template <typename Lookup>
inline OpenmpThreads OpenmpThreads::resolve_with(Lookup lookup) noexcept {
  OpenmpThreads omp;
  auto set = reinterpret_cast<void (*)(int)>(lookup("omp_set_num_threads"));
  auto get = reinterpret_cast<int (*)()>(lookup("omp_get_max_threads"));
  if (!set || !get) return omp;
  omp.set_ = set;
  omp.get_ = get;
  auto parallel = reinterpret_cast<void (*)(void (*)(void*), void*, unsigned, unsigned)>(lookup("GOMP_parallel"));
  auto num = reinterpret_cast<int (*)()>(lookup("omp_get_num_threads"));
  auto tid = reinterpret_cast<int (*)()>(lookup("omp_get_thread_num"));
  if (parallel && num && tid) {
    omp.parallel_ = parallel;
    omp.num_threads_ = num;
    omp.thread_num_ = tid;
  }
  return omp;
}

}  // namespace kiln::cpu
