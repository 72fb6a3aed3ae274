// LargeBlockCache: freed host blocks of at least kMinBytes, kept for the next
// allocation of the same size, up to a byte cap (oldest evicted first).
//
// Why: glibc maps blocks above its mmap threshold (at most 32 MB) afresh for
// every allocation and unmaps them on free, so a model whose activations are
// that large pays first-touch page faults and kernel page zeroing for all of
// them on every call: ResNet-50 at batch 32 spent ~9% of a call there. A model
// allocates the same sizes call after call, so exact-size reuse removes it.
//
// The cost is memory: up to the cap stays resident between calls (ResNet-50 at
// batch 32: ~300 MB). Setting cpu_block_cache_bytes sets the cap (0: off).
//
// Ownership: the cache owns the blocks it holds (std::free on eviction);
// blocks handed out by take() belong to the caller. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <unordered_map>

namespace kiln {

class LargeBlockCache {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 20;

  explicit LargeBlockCache(size_t cap_bytes) : cap_(cap_bytes) {}
  ~LargeBlockCache();
  LargeBlockCache(const LargeBlockCache&) = delete;
  LargeBlockCache& operator=(const LargeBlockCache&) = delete;

  /// A kept block of exactly `bytes` (the size given to keep()), or null.
  void* take(size_t bytes);
  /// Keeps `block` (from std::aligned_alloc/malloc, `bytes` long) for reuse,
  /// evicting the oldest blocks when the cap would be passed. False when the
  /// block is not kept (too small, or larger than the cap): the caller frees it.
  bool keep(void* block, size_t bytes);
  /// Frees every kept block.
  void clear();

  size_t cached_bytes() const;
  size_t cap_bytes() const noexcept { return cap_; }

  /// The process's cache for CpuDevice, capped by setting
  /// cpu_block_cache_bytes as it is at the first call. Never destroyed (frees may come from static
  /// destructors at exit); reachable, so leak checkers do not report it.
  static LargeBlockCache& process();

 private:
  struct Kept {
    size_t bytes;
    void* block;
  };
  // Oldest first; the index finds a block of a size.
  using Order = std::list<Kept>;
  void evict_oldest();  // the caller holds mutex_

  const size_t cap_;
  mutable std::mutex mutex_;
  Order order_;
  std::unordered_multimap<size_t, Order::iterator> by_size_;
  size_t cached_ = 0;
};

}  // namespace kiln
