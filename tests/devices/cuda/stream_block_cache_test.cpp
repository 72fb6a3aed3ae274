// StreamBlockCache's bookkeeping, on the host: blocks come back only for the
// stream and exact size they were freed with, within the limits, and draining
// hands back exactly what was kept.
#include "devices/cuda/device/stream_block_cache.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kiln::cudadev {
namespace {

void* fake_ptr(uintptr_t n) { return reinterpret_cast<void*>(n * 256); }
void* const kStreamA = fake_ptr(1000);
void* const kStreamB = fake_ptr(2000);

TEST(StreamBlockCache, ReturnsABlockOnlyForItsStreamAndExactSize) {
  StreamBlockCache cache(1 << 20, 4);
  ASSERT_TRUE(cache.keep(0, kStreamA, fake_ptr(1), 512));
  EXPECT_EQ(cache.take(0, kStreamB, 512), nullptr);  // another stream: not ordered after the last use
  EXPECT_EQ(cache.take(0, kStreamA, 1024), nullptr);
  EXPECT_EQ(cache.take(1, kStreamA, 512), nullptr);  // another device
  EXPECT_EQ(cache.bytes(0), 512u);
  EXPECT_EQ(cache.take(0, kStreamA, 512), fake_ptr(1));
  EXPECT_EQ(cache.take(0, kStreamA, 512), nullptr);  // handed out once
  EXPECT_EQ(cache.bytes(0), 0u);
}

TEST(StreamBlockCache, RefusesPastItsLimits) {
  StreamBlockCache cache(4096, 2);
  EXPECT_TRUE(cache.keep(0, kStreamA, fake_ptr(1), 1024));
  EXPECT_TRUE(cache.keep(0, kStreamA, fake_ptr(2), 1024));
  EXPECT_FALSE(cache.keep(0, kStreamA, fake_ptr(3), 1024));  // third block of one size
  EXPECT_TRUE(cache.keep(0, kStreamB, fake_ptr(4), 2048));
  EXPECT_FALSE(cache.keep(0, kStreamB, fake_ptr(5), 16));  // 4096 bytes per device already
  EXPECT_TRUE(cache.keep(1, kStreamB, fake_ptr(6), 16));   // the limit is per device
  EXPECT_EQ(cache.bytes(0), 4096u);
}

TEST(StreamBlockCache, DrainsByStreamAndByDevice) {
  StreamBlockCache cache(1 << 20, 8);
  ASSERT_TRUE(cache.keep(0, kStreamA, fake_ptr(1), 512));
  ASSERT_TRUE(cache.keep(0, kStreamA, fake_ptr(2), 1024));
  ASSERT_TRUE(cache.keep(0, kStreamB, fake_ptr(3), 512));
  ASSERT_TRUE(cache.keep(1, kStreamB, fake_ptr(4), 512));

  auto a = cache.drain_stream(kStreamA);
  ASSERT_EQ(a.size(), 2u);
  for (const auto& e : a) EXPECT_EQ(e.stream, kStreamA);
  EXPECT_EQ(cache.take(0, kStreamA, 512), nullptr);
  EXPECT_EQ(cache.bytes(0), 512u);

  auto d1 = cache.drain_device(1);
  ASSERT_EQ(d1.size(), 1u);
  EXPECT_EQ(d1[0].ptr, fake_ptr(4));
  EXPECT_EQ(d1[0].nbytes, 512u);
  EXPECT_EQ(cache.bytes(1), 0u);
  EXPECT_EQ(cache.take(0, kStreamB, 512), fake_ptr(3));  // device 0's block stayed
}

}  // namespace
}  // namespace kiln::cudadev
