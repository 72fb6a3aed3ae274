// LtAlgoCache's bookkeeping, on the host: answers only for the exact key,
// empties itself when full instead of growing, and stays consistent under
// concurrent lookups and inserts.
#include "shims/cuda/lt_algo_cache.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kiln::cudadev {
namespace {

LtProblemKey key_of(int64_t m, int64_t n, int64_t k) {
  LtProblemKey key{};
  key[0] = m;
  key[1] = n;
  key[2] = k;
  return key;
}

TEST(LtAlgoCache, FindsOnlyTheExactKey) {
  LtAlgoCache<int> cache(8);
  EXPECT_FALSE(cache.find(key_of(1, 2, 3)).has_value());
  cache.insert(key_of(1, 2, 3), 42);
  ASSERT_TRUE(cache.find(key_of(1, 2, 3)).has_value());
  EXPECT_EQ(*cache.find(key_of(1, 2, 3)), 42);
  EXPECT_FALSE(cache.find(key_of(1, 3, 2)).has_value());
  LtProblemKey last_differs = key_of(1, 2, 3);
  last_differs[kLtKeyFields - 1] = 1;
  EXPECT_FALSE(cache.find(last_differs).has_value());
  cache.insert(key_of(1, 2, 3), 43);  // a repeated insert replaces, not duplicates
  EXPECT_EQ(*cache.find(key_of(1, 2, 3)), 43);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(LtAlgoCache, EmptiesWhenFull) {
  LtAlgoCache<int> cache(4);
  for (int i = 0; i < 4; ++i) cache.insert(key_of(i, 0, 0), i);
  EXPECT_EQ(cache.size(), 4u);
  cache.insert(key_of(2, 0, 0), 20);  // present: no eviction
  EXPECT_EQ(cache.size(), 4u);
  cache.insert(key_of(9, 0, 0), 9);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_FALSE(cache.find(key_of(0, 0, 0)).has_value());
  EXPECT_EQ(*cache.find(key_of(9, 0, 0)), 9);
}

TEST(LtAlgoCache, ConcurrentInsertsAndLookupsAgree) {
  // Values are a function of the key, so any hit must hold exactly it.
  LtAlgoCache<int64_t> cache(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 20000; ++i) {
        const int64_t m = (i * 7 + t) % 100;  // 100 keys > capacity: clears happen too
        const auto key = key_of(m, m + 1, m + 2);
        if (auto hit = cache.find(key)) {
          EXPECT_EQ(*hit, m * 1000) << "key " << m;
        } else {
          cache.insert(key, m * 1000);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cache.size(), 64u);
}

}  // namespace
}  // namespace kiln::cudadev
