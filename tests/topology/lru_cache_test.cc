// The bounded memo the router's rings and the ranker's link solves live in.
#include "topology/lru_cache.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace phasor::topology {
namespace {

TEST(LruCacheTest, TheLeastRecentlyUsedGoesFirstWhenTheBudgetIsPassed) {
  LruCache<std::string, int> cache(3);
  cache.Put("a", 1, 1);
  cache.Put("b", 2, 1);
  cache.Put("c", 3, 1);
  ASSERT_EQ(cache.Find("a"), 1);  // a is now the most recently used: b is the coldest
  cache.Put("d", 4, 1);
  EXPECT_EQ(cache.Find("b"), std::nullopt);
  EXPECT_EQ(cache.Find("a"), 1);
  EXPECT_EQ(cache.Find("c"), 3);
  EXPECT_EQ(cache.Find("d"), 4);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.total_cost(), 3u);
}

TEST(LruCacheTest, CostsAreSummedAndAnEntryOverTheWholeBudgetIsNotKept) {
  LruCache<int, int> cache(10);
  cache.Put(1, 10, 4);
  cache.Put(2, 20, 4);
  cache.Put(3, 30, 4);  // 12 > 10: key 1 goes
  EXPECT_EQ(cache.Find(1), std::nullopt);
  EXPECT_EQ(cache.total_cost(), 8u);
  cache.Put(4, 40, 11);  // more than the budget alone: not kept, nothing evicted
  EXPECT_EQ(cache.Find(4), std::nullopt);
  EXPECT_EQ(cache.Find(2), 20);
  EXPECT_EQ(cache.Find(3), 30);
  cache.Put(2, 21, 6);  // replaced: its old cost is given back first (6 + 4 = 10)
  EXPECT_EQ(cache.Find(2), 21);
  EXPECT_EQ(cache.Find(3), 30);
  EXPECT_EQ(cache.total_cost(), 10u);
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.total_cost(), 0u);
  EXPECT_EQ(cache.Find(3), std::nullopt);
}

TEST(LruCacheTest, AnEvictedSharedValueStaysAliveForItsReader) {
  LruCache<int, std::shared_ptr<const std::string>> cache(1);
  cache.Put(1, std::make_shared<const std::string>("kept"), 1);
  const std::shared_ptr<const std::string> held = *cache.Find(1);
  cache.Put(2, std::make_shared<const std::string>("new"), 1);
  EXPECT_EQ(cache.Find(1), std::nullopt);
  EXPECT_EQ(*held, "kept");
}

}  // namespace
}  // namespace phasor::topology
