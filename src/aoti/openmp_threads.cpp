#include "aoti/openmp_threads.h"

#include <sched.h>

namespace kiln::aoti {

int available_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

OpenmpThreads OpenmpThreads::resolve(const AotiLibrary& library) noexcept {
  OpenmpThreads omp;
  auto set = reinterpret_cast<void (*)(int)>(library.symbol("omp_set_num_threads"));
  auto get = reinterpret_cast<int (*)()>(library.symbol("omp_get_max_threads"));
  if (set && get) {
    omp.set_ = set;
    omp.get_ = get;
  }
  return omp;
}

OpenmpThreads::Scope::Scope(const OpenmpThreads& omp, int threads) noexcept {
  if (!omp.active()) return;
  previous_ = omp.get_();
  if (previous_ == threads) return;  // nothing to set, nothing to restore
  set_ = omp.set_;
  set_(threads);
}

OpenmpThreads::Scope::~Scope() {
  if (set_) set_(previous_);
}

}  // namespace kiln::aoti
