// parallel_for: splits a CPU fallback op's independent work items over the
// OpenMP team of the model call that invoked the op.
//
// The thread count is the method's (aoti.num_threads, published on the calling
// thread by OpenmpThreads::Scope for the duration of the call), and the
// threads are the model's own OpenMP workers: the region is opened with the
// GOMP_parallel of the OpenMP runtime the model library is bound to. So no
// threads are created per call, and no second pool competes with OpenMP's
// workers (which spin for a while after each generated kernel) for the CPUs.
// Outside a model call (e.g. a shim called directly), in a model without an
// OpenMP runtime, and inside a parallel_for body, the work runs inline on the
// calling thread.
//
// Results do not depend on the thread count as long as each item's result
// does not depend on which range it is computed in (true of the callers:
// every item is computed the same way on whichever thread).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kiln/error.h"

namespace kiln::cpu {

/// Threads a parallel_for on this thread may use now: the model call's count,
/// or 1 (outside a call, without OpenMP, or inside a parallel_for body).
int parallel_threads() noexcept;

/// Whether the calling thread is running a parallel_for body on a team of
/// more than one thread (work there must stay on this thread).
bool inside_parallel_region() noexcept;

namespace detail {
using RangeFn = Error (*)(void* body, int64_t begin, int64_t end);
Error parallel_for(int64_t n, int64_t grain, RangeFn fn, void* body);
}  // namespace detail

/// Calls body(begin, end) -> Error on contiguous ranges covering [0, n), each
/// of at least `grain` items (one range [0, n) when n < 2 * grain), at most
/// one range per thread; the calling thread takes the first range. Returns the first error
/// (its message set on the calling thread) once all ranges are done; an
/// exception thrown by a body is rethrown on the calling thread.
template <typename Body>
Error parallel_for(int64_t n, int64_t grain, Body&& body) {
  auto call = [](void* b, int64_t begin, int64_t end) -> Error {
    return (*static_cast<std::remove_reference_t<Body>*>(b))(begin, end);
  };
  return detail::parallel_for(n, grain, call, const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace kiln::cpu
