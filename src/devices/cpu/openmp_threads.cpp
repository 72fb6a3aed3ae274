#include "devices/cpu/openmp_threads.h"

#include <dlfcn.h>
#include <sched.h>

namespace kiln::cpu {

namespace {
// The innermost Scope's runtime and count on this thread.
thread_local const OpenmpThreads* t_current = nullptr;
thread_local int t_current_threads = 1;
}  // namespace

int available_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

OpenmpThreads OpenmpThreads::resolve_handle(void* handle) noexcept {
  if (!handle) return {};
  return resolve_with([&](const char* name) { return ::dlsym(handle, name); });
}


void OpenmpThreads::fork(void (*fn)(void*), void* data, int threads) const noexcept {
  parallel_(fn, data, static_cast<unsigned>(threads > 0 ? threads : 1), 0);
}

OpenmpThreads::Scope::Scope(const OpenmpThreads& omp, int threads) noexcept
    : previous_current_(t_current), previous_current_threads_(t_current_threads) {
  t_current = omp.can_fork() ? &omp : nullptr;
  t_current_threads = omp.can_fork() ? threads : 1;
  if (!omp.active()) return;
  previous_ = omp.get_();
  if (previous_ == threads) return;  // nothing to set, nothing to restore
  set_ = omp.set_;
  set_(threads);
}

OpenmpThreads::Scope::~Scope() {
  if (set_) set_(previous_);
  t_current = previous_current_;
  t_current_threads = previous_current_threads_;
}

const OpenmpThreads* OpenmpThreads::current(int* threads) noexcept {
  *threads = t_current ? t_current_threads : 1;
  return t_current;
}

}  // namespace kiln::cpu
