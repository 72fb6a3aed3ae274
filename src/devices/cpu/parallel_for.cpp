#include "devices/cpu/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>

#include "devices/cpu/openmp_threads.h"

namespace kiln::cpu {

namespace {

// Set while this thread runs a body of a multi-thread parallel_for: nested
// calls run inline (OpenMP would give them one thread anyway, after the cost
// of opening a region).
thread_local bool t_inside = false;

struct Region {
  const OpenmpThreads* omp = nullptr;
  int64_t n = 0;
  int64_t ranges = 0;
  detail::RangeFn fn = nullptr;
  void* body = nullptr;
  // The first failure, claimed by one thread; the others' are dropped.
  std::atomic<bool> failed{false};
  Error error = Error::Ok;
  std::string message;
  std::exception_ptr exception;
};

void fail(Region& r, Error error, std::string message, std::exception_ptr exception) {
  if (r.failed.exchange(true)) return;
  r.error = error;
  r.message = std::move(message);
  r.exception = std::move(exception);
}

// One team thread's share. The runtime may have given fewer threads than
// asked for: each thread then takes every team_size-th range.
void run_member(void* data) {
  Region& r = *static_cast<Region*>(data);
  const int64_t team = r.omp->team_size(), me = r.omp->thread_num();
  const bool was_inside = t_inside;
  t_inside = true;
  for (int64_t i = me; i < r.ranges; i += team) {
    const int64_t begin = r.n * i / r.ranges, end = r.n * (i + 1) / r.ranges;
    try {
      const Error e = r.fn(r.body, begin, end);
      if (e != Error::Ok) fail(r, e, last_error_message(), nullptr);
    } catch (...) {
      fail(r, Error::Internal, "", std::current_exception());
    }
  }
  t_inside = was_inside;
}

}  // namespace

int parallel_threads() noexcept {
  if (t_inside) return 1;
  int threads = 1;
  return OpenmpThreads::current(&threads) ? threads : 1;
}

bool inside_parallel_region() noexcept { return t_inside; }

Error detail::parallel_for(int64_t n, int64_t grain, RangeFn fn, void* body) {
  if (n <= 0) return Error::Ok;
  grain = std::max<int64_t>(grain, 1);
  int threads = 1;
  const OpenmpThreads* omp = t_inside ? nullptr : OpenmpThreads::current(&threads);
  const int64_t ranges = std::min<int64_t>(threads, n / grain);
  if (omp == nullptr || ranges <= 1) return fn(body, 0, n);
  Region region;
  region.omp = omp;
  region.n = n;
  region.ranges = ranges;
  region.fn = fn;
  region.body = body;
  omp->fork(run_member, &region, static_cast<int>(ranges));
  if (region.exception) std::rethrow_exception(region.exception);
  if (region.error != Error::Ok) return set_error(region.error, region.message);
  return Error::Ok;
}

}  // namespace kiln::cpu
