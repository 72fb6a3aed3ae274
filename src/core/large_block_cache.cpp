#include "core/large_block_cache.h"

#include <cstdlib>

#include "core/settings.h"

namespace kiln {

LargeBlockCache::~LargeBlockCache() { clear(); }

void* LargeBlockCache::take(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_size_.find(bytes);
  if (it == by_size_.end()) return nullptr;
  Order::iterator kept = it->second;
  void* block = kept->block;
  cached_ -= kept->bytes;
  order_.erase(kept);
  by_size_.erase(it);
  return block;
}

bool LargeBlockCache::keep(void* block, size_t bytes) {
  if (block == nullptr || bytes < kMinBytes || bytes > cap_) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  while (cached_ + bytes > cap_) evict_oldest();
  // Out of host memory for the bookkeeping: not kept, the caller frees the block.
  try {
    order_.push_back(Kept{bytes, block});
  } catch (...) {
    return false;
  }
  try {
    by_size_.emplace(bytes, std::prev(order_.end()));
  } catch (...) {
    order_.pop_back();
    return false;
  }
  cached_ += bytes;
  return true;
}

void LargeBlockCache::evict_oldest() {
  const Kept oldest = order_.front();
  auto [first, last] = by_size_.equal_range(oldest.bytes);
  for (auto it = first; it != last; ++it) {
    if (it->second == order_.begin()) {
      by_size_.erase(it);
      break;
    }
  }
  order_.pop_front();
  cached_ -= oldest.bytes;
  std::free(oldest.block);
}

void LargeBlockCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!order_.empty()) evict_oldest();
}

size_t LargeBlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

LargeBlockCache& LargeBlockCache::process() {
  static LargeBlockCache* cache =
      new LargeBlockCache(static_cast<size_t>(process_settings().get_int(SettingId::CpuBlockCacheBytes)));
  return *cache;
}

}  // namespace kiln
