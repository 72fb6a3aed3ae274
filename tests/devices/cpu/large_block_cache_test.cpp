// LargeBlockCache: exact-size reuse, the cap with oldest-first eviction, the
// blocks it refuses, and CpuDevice handing a freed large block out again
// (poisoned again when poisoning is on).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "core/cpu_device.h"
#include "core/large_block_cache.h"

namespace {

using kiln::LargeBlockCache;

constexpr size_t kMiB = size_t{1} << 20;

void* block(size_t bytes) { return std::malloc(bytes); }

TEST(LargeBlockCache, ReusesABlockOfExactlyTheSameSize) {
  LargeBlockCache cache(16 * kMiB);
  void* a = block(2 * kMiB);
  ASSERT_TRUE(cache.keep(a, 2 * kMiB));
  EXPECT_EQ(cache.cached_bytes(), 2 * kMiB);
  EXPECT_EQ(cache.take(2 * kMiB + 64), nullptr) << "sizes must match exactly";
  EXPECT_EQ(cache.take(2 * kMiB), a);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.take(2 * kMiB), nullptr);
  std::free(a);
}

TEST(LargeBlockCache, RefusesSmallBlocksAndBlocksOverTheCap) {
  LargeBlockCache cache(4 * kMiB);
  void* small = block(kMiB - 64);
  void* huge = block(5 * kMiB);
  EXPECT_FALSE(cache.keep(small, kMiB - 64));
  EXPECT_FALSE(cache.keep(huge, 5 * kMiB));
  EXPECT_EQ(cache.cached_bytes(), 0u);
  std::free(small);
  std::free(huge);
  LargeBlockCache off(0);
  void* a = block(2 * kMiB);
  EXPECT_FALSE(off.keep(a, 2 * kMiB)) << "a cap of 0 turns the cache off";
  std::free(a);
}

TEST(LargeBlockCache, TheOldestBlocksMakeRoomUnderTheCap) {
  LargeBlockCache cache(6 * kMiB);
  void* a = block(2 * kMiB);
  void* b = block(2 * kMiB);
  void* c = block(3 * kMiB);
  ASSERT_TRUE(cache.keep(a, 2 * kMiB));
  ASSERT_TRUE(cache.keep(b, 2 * kMiB));
  ASSERT_TRUE(cache.keep(c, 3 * kMiB));  // 7 MiB > 6: `a`, the oldest, goes
  EXPECT_EQ(cache.cached_bytes(), 5 * kMiB);
  EXPECT_EQ(cache.take(2 * kMiB), b);
  EXPECT_EQ(cache.take(2 * kMiB), nullptr) << "the evicted block must not come back";
  EXPECT_EQ(cache.take(3 * kMiB), c);
  std::free(b);
  std::free(c);
}

TEST(LargeBlockCache, ClearFreesEverything) {
  LargeBlockCache cache(16 * kMiB);
  ASSERT_TRUE(cache.keep(block(2 * kMiB), 2 * kMiB));
  ASSERT_TRUE(cache.keep(block(2 * kMiB), 2 * kMiB));
  cache.clear();  // ASan would report the blocks if they leaked
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(cache.take(2 * kMiB), nullptr);
}

TEST(CpuDeviceBlocks, AFreedLargeBlockServesTheNextAllocationOfItsSize) {
  auto& device = kiln::CpuDevice::instance();
  auto& cache = LargeBlockCache::process();
  if (cache.cap_bytes() < 8 * kMiB) GTEST_FAIL() << "KILN_CPU_BLOCK_CACHE_BYTES is set below 8 MiB for this test";
  const size_t before_in_use = device.bytes_in_use();
  auto first = device.allocate(3 * kMiB, 0, nullptr);
  ASSERT_TRUE(first.ok());
  std::memset(*first, 0x11, 3 * kMiB);
  device.free(*first, 0, nullptr);
  EXPECT_EQ(device.bytes_in_use(), before_in_use) << "a kept block is not in use";
  auto second = device.allocate(3 * kMiB, 0, nullptr);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first) << "the same size must reuse the kept block";
  device.free(*second, 0, nullptr);
  auto other = device.allocate(3 * kMiB + 4096, 0, nullptr);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first) << "another size must not take it";
  device.free(*other, 0, nullptr);
}

}  // namespace
