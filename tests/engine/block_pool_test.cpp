#include "omni/engine/block_pool.hpp"

#include <gtest/gtest.h>

#include <variant>
#include <vector>

namespace omni::engine {
namespace {

std::uint64_t removed_hash(const kvcache::KVEvent& event) {
  const auto& removed = std::get<kvcache::BlockRemoved>(event);
  EXPECT_EQ(removed.block_hashes.size(), 1u);
  return std::get<std::uint64_t>(removed.block_hashes.at(0));
}

TEST(BlockPool, AllocatesNeverUsedBlocksInIdOrderFirst) {
  BlockPool pool(4, 16, nullptr);
  EXPECT_EQ(pool.num_free(), 4u);
  EXPECT_EQ(pool.allocate(), BlockId{0});
  EXPECT_EQ(pool.allocate(), BlockId{1});
  pool.release(0);
  // The freed block goes to the tail, behind the never-used blocks 2 and 3.
  EXPECT_EQ(pool.allocate(), BlockId{2});
  EXPECT_EQ(pool.allocate(), BlockId{3});
  EXPECT_EQ(pool.allocate(), BlockId{0});
  EXPECT_EQ(pool.num_free(), 0u);
  EXPECT_EQ(pool.allocate(), std::nullopt);
}

TEST(BlockPool, FreedBlocksAreReusedInLruOrder) {
  BlockPool pool(3, 16, nullptr);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(pool.allocate());
  pool.release(2);
  pool.release(0);
  pool.release(1);
  EXPECT_EQ(pool.allocate(), BlockId{2});
  EXPECT_EQ(pool.allocate(), BlockId{0});
  EXPECT_EQ(pool.allocate(), BlockId{1});
}

TEST(BlockPool, ReleaseAllFreesTheTailOfASequenceFirst) {
  BlockPool pool(3, 16, nullptr);
  std::vector<BlockId> seq;
  for (int k = 0; k < 3; ++k) seq.push_back(*pool.allocate());
  pool.release_all(seq);
  EXPECT_EQ(pool.allocate(), BlockId{2});
  EXPECT_EQ(pool.allocate(), BlockId{1});
  EXPECT_EQ(pool.allocate(), BlockId{0});
}

TEST(BlockPool, CachedFreeBlockHitLeavesTheFreeQueue) {
  std::vector<kvcache::KVEvent> events;
  BlockPool pool(2, 16, &events);
  const BlockId a = *pool.allocate();
  const BlockId b = *pool.allocate();
  ASSERT_TRUE(pool.cache(a, 111));
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 2u);
  ASSERT_EQ(pool.lookup(111), a);
  pool.touch(a);  // a prefix hit takes it out of the queue
  EXPECT_EQ(pool.num_free(), 1u);
  EXPECT_EQ(pool.allocate(), b);
  EXPECT_EQ(pool.allocate(), std::nullopt);
  EXPECT_TRUE(events.empty());
}

TEST(BlockPool, EvictingACachedBlockEmitsBlockRemoved) {
  std::vector<kvcache::KVEvent> events;
  BlockPool pool(1, 16, &events);
  const BlockId a = *pool.allocate();
  ASSERT_TRUE(pool.cache(a, 42));
  pool.release(a);
  EXPECT_EQ(pool.lookup(42), a);  // still reusable while free
  EXPECT_EQ(pool.allocate(), a);
  EXPECT_EQ(pool.lookup(42), std::nullopt);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(removed_hash(events[0]), 42u);
}

TEST(BlockPool, DuplicateHashStaysPrivate) {
  BlockPool pool(2, 16, nullptr);
  const BlockId a = *pool.allocate();
  const BlockId b = *pool.allocate();
  EXPECT_TRUE(pool.cache(a, 7));
  EXPECT_FALSE(pool.cache(b, 7));
  EXPECT_FALSE(pool.cache(a, 8));  // already cached under 7
  EXPECT_EQ(pool.lookup(7), a);
  EXPECT_EQ(pool.num_cached(), 1u);
}

TEST(BlockPool, SharedBlockIsFreedOnlyByItsLastReference) {
  BlockPool pool(1, 16, nullptr);
  const BlockId a = *pool.allocate();
  pool.touch(a);
  pool.release(a);
  EXPECT_EQ(pool.num_free(), 0u);
  pool.release(a);
  EXPECT_EQ(pool.num_free(), 1u);
}

TEST(BlockPool, ResetPrefixCacheOnlyWhenNothingIsInUse) {
  std::vector<kvcache::KVEvent> events;
  BlockPool pool(2, 16, &events);
  const BlockId a = *pool.allocate();
  ASSERT_TRUE(pool.cache(a, 5));
  EXPECT_FALSE(pool.reset_prefix_cache());
  EXPECT_TRUE(events.empty());
  pool.release(a);
  EXPECT_TRUE(pool.reset_prefix_cache());
  EXPECT_EQ(pool.lookup(5), std::nullopt);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<kvcache::AllBlocksCleared>(events[0]));
  // Evicting the block later emits nothing: its hash is gone.
  EXPECT_EQ(pool.allocate(), BlockId{1});
  EXPECT_EQ(pool.allocate(), a);
  EXPECT_EQ(events.size(), 1u);
}

}  // namespace
}  // namespace omni::engine
