// Where a fallback random op (rand, randn, randint, bernoulli, dropout, the
// seeds Inductor's own random kernels start from) gets its numbers: a
// RandomSource, a Philox key plus a counter of the blocks handed out so far.
// Each loaded method owns one, keyed by the `aoti.seed` load option, so a
// method's random outputs are reproducible per seed (the n-th call of a method
// loaded with seed s gives the same numbers in every process) and calls never
// reuse numbers. The method publishes its source on the calling thread for
// the duration of a call (RandomScope); outside a call (a shim called
// directly) the process's own source is used, seeded at random. Exported for
// the CUDA plugin's random ops.
#pragma once

#include <atomic>
#include <cstdint>

#include "kiln/error.h"
#include "kiln/export.h"
#include "shims/common/shim_abi.h"

namespace kiln::aoti {

class KILN_API RandomSource {
 public:
  explicit RandomSource(uint64_t seed) noexcept : seed_(seed) {}
  RandomSource(const RandomSource&) = delete;
  RandomSource& operator=(const RandomSource&) = delete;

  uint64_t seed() const noexcept { return seed_; }

  /// Reserves `blocks` Philox blocks; returns the counter of the first. Thread-safe:
  /// concurrent calls get disjoint ranges.
  uint64_t take(uint64_t blocks) noexcept { return next_.fetch_add(blocks, std::memory_order_relaxed); }

  /// Blocks handed out so far (a new source starts at 0).
  uint64_t offset() const noexcept { return next_.load(std::memory_order_relaxed); }

 private:
  const uint64_t seed_;
  std::atomic<uint64_t> next_{0};
};

/// The source random ops on this thread draw from now: the innermost
/// RandomScope's, else the process's.
KILN_API RandomSource& current_random_source() noexcept;

/// A seed from the operating system's entropy, for sources nobody seeded.
KILN_API uint64_t entropy_seed() noexcept;

/// Ok for a null generator argument; Kiln has no generator objects (random
/// ops draw from the method's seed), so a given one is an error saying so.
KILN_API Error refuse_generator(AtenGeneratorHandle* generator);

/// Publishes `source` to random ops on this thread until destroyed; nests.
class KILN_API RandomScope {
 public:
  explicit RandomScope(RandomSource* source) noexcept;
  ~RandomScope();
  RandomScope(const RandomScope&) = delete;
  RandomScope& operator=(const RandomScope&) = delete;

 private:
  RandomSource* previous_;
};

}  // namespace kiln::aoti
