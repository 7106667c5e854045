#include <gtest/gtest.h>

#include <map>
#include <set>

#include "omni/common/random.hpp"
#include "omni/sched/prefix_index.hpp"

namespace omni::sched {
namespace {

using Hashes = std::vector<std::uint64_t>;

std::uint32_t depth_of(const std::vector<PrefixMatch>& matches, InstanceId instance) {
  for (const auto& m : matches) {
    if (m.instance == instance) return m.blocks;
  }
  return 0;
}

TEST(PrefixIndex, MatchesLeadingBlocksPerInstanceLongestFirst) {
  PrefixIndex index;
  index.stored(1, Hashes{10, 11, 12, 13}, 0);
  index.stored(2, Hashes{10, 11}, 0);
  index.stored(3, Hashes{99}, 0);
  const auto matches = index.match(Hashes{10, 11, 12, 50}, 0);
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[0].instance, 1u);
  EXPECT_EQ(matches[0].blocks, 3u);
  EXPECT_EQ(matches[1].instance, 2u);
  EXPECT_EQ(matches[1].blocks, 2u);
  EXPECT_EQ(index.match_instance(1, Hashes{10, 11, 12, 50}, 0), 3u);
  EXPECT_EQ(index.match_instance(3, Hashes{10}, 0), 0u);
  EXPECT_TRUE(index.match(Hashes{42}, 0).empty());
  EXPECT_TRUE(index.match(Hashes{}, 0).empty());
}

TEST(PrefixIndex, AGapStopsTheMatchLikeTheEnginesOwnLookup) {
  PrefixIndex index;
  index.stored(1, Hashes{1, 2, 3}, 0);
  index.removed(1, Hashes{2});
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2, 3}, 0), 1u);
  EXPECT_EQ(depth_of(index.match(Hashes{1, 2, 3}, 0), 1), 1u);
}

TEST(PrefixIndex, ClearAndRemovalForgetAnInstanceOnly) {
  PrefixIndex index;
  index.stored(1, Hashes{1, 2}, 0);
  index.stored(2, Hashes{1, 2}, 0);
  index.cleared(1);
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2}, 0), 0u);
  EXPECT_EQ(index.match_instance(2, Hashes{1, 2}, 0), 2u);
  index.stored(1, Hashes{1}, 0);  // stores after the clear count again
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2}, 0), 1u);
  index.remove_instance(2);
  EXPECT_EQ(index.match_instance(2, Hashes{1, 2}, 0), 0u);
}

TEST(PrefixIndex, PredictedEntriesExpireUnlessAnEventConfirmsThem) {
  PrefixIndexOptions options;
  options.predicted_ttl_s = 2.0;
  PrefixIndex index(options);
  index.insert_predicted(1, Hashes{1, 2, 3}, 10.0);
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2, 3}, 11.0), 3u);
  index.stored(1, Hashes{1, 2}, 11.5);  // the engine's events confirm two of them
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2, 3}, 12.5), 2u);
  // A later prediction never turns an exact entry back into a fading one.
  index.insert_predicted(1, Hashes{1, 2}, 20.0);
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2}, 100.0), 2u);
}

TEST(PrefixIndex, AppliesDecodedEventBatchesWithIntegerAndByteHashes) {
  PrefixIndex index;
  kvcache::KVEventBatch batch;
  kvcache::BlockStored stored;
  stored.block_hashes = {
      kvcache::EventHash{std::uint64_t{7}},
      kvcache::EventHash{std::vector<std::uint8_t>{0xAA, 0, 0, 0, 0, 0, 0, 0, 8}}};
  batch.events.emplace_back(stored);
  index.apply_events(4, batch, 0);
  EXPECT_EQ(index.match_instance(4, Hashes{7, 8}, 0), 2u);  // the last 8 bytes, big-endian
  kvcache::KVEventBatch clear;
  clear.events.emplace_back(kvcache::AllBlocksCleared{});
  index.apply_events(4, clear, 0);
  EXPECT_EQ(index.match_instance(4, Hashes{7}, 0), 0u);
  EXPECT_EQ(index.stats().events_applied, 2u);
}

TEST(PrefixIndex, DuplicatedAndUnknownEventsAreHarmless) {
  PrefixIndex index;
  index.stored(1, Hashes{1, 2}, 0);
  index.stored(1, Hashes{1, 2}, 0);
  EXPECT_EQ(index.stats().entries, 2u);
  index.removed(1, Hashes{77, 78});  // never stored
  index.removed(9, Hashes{1});       // another instance's block
  index.removed(1, Hashes{2});
  index.removed(1, Hashes{2});  // twice
  EXPECT_EQ(index.match_instance(1, Hashes{1, 2}, 0), 1u);
  EXPECT_EQ(index.stats().entries, 1u);
  EXPECT_EQ(index.stats().blocks, 1u);
}

TEST(PrefixIndex, MemoryStaysUnderTheBoundDroppingTheLeastRecentlyStored) {
  PrefixIndexOptions options;
  options.max_entries = 100;
  PrefixIndex index(options);
  for (std::uint64_t h = 0; h < 1000; ++h) index.stored(1, Hashes{h}, 0);
  const auto stats = index.stats();
  EXPECT_LE(stats.entries, 100u);
  EXPECT_EQ(stats.evicted, 900u);
  EXPECT_EQ(index.match_instance(1, Hashes{999}, 0), 1u);
  EXPECT_EQ(index.match_instance(1, Hashes{0}, 0), 0u);
  EXPECT_GT(stats.memory_bytes, 0u);
}

// Eviction is CLOCK: a block touched since the hand last passed gets a second chance.
TEST(PrefixIndex, ABlockTouchedAgainSurvivesTheNextEviction) {
  PrefixIndexOptions options;
  options.max_entries = 100;
  PrefixIndex index(options);
  for (std::uint64_t h = 0; h <= 100; ++h) index.stored(1, Hashes{h}, 0);  // evicts block 0
  EXPECT_EQ(index.match_instance(1, Hashes{0}, 0), 0u);
  index.stored(1, Hashes{1}, 0);    // touched again
  index.stored(1, Hashes{101}, 0);  // over the bound: 1 is spared, 2 goes
  EXPECT_EQ(index.match_instance(1, Hashes{1}, 0), 1u);
  EXPECT_EQ(index.match_instance(1, Hashes{2}, 0), 0u);
  EXPECT_EQ(index.match_instance(1, Hashes{3}, 0), 1u);
  EXPECT_EQ(index.stats().evicted, 2u);
}

// The index against a plain reference model under a long random mix of operations.
TEST(PrefixIndex, AgreesWithAReferenceModelUnderRandomOperations) {
  PrefixIndex index;
  std::map<InstanceId, std::set<std::uint64_t>> model;
  SeededRandom random(123);
  const auto pick_hashes = [&](std::size_t n) {
    Hashes hashes;
    for (std::size_t i = 0; i < n; ++i) hashes.push_back(random.next_u64() % 64);
    return hashes;
  };
  for (int step = 0; step < 20000; ++step) {
    const auto instance = static_cast<InstanceId>(random.next_u64() % 4);
    const auto op = random.next_u64() % 10;
    if (op < 5) {
      const Hashes h = pick_hashes(1 + random.next_u64() % 4);
      index.stored(instance, h, 0);
      model[instance].insert(h.begin(), h.end());
    } else if (op < 9) {
      const Hashes h = pick_hashes(1 + random.next_u64() % 3);
      index.removed(instance, h);
      for (auto x : h) model[instance].erase(x);
    } else {
      index.cleared(instance);
      model[instance].clear();
    }
    const Hashes query = pick_hashes(1 + random.next_u64() % 6);
    const auto matches = index.match(query, 0);
    for (InstanceId i = 0; i < 4; ++i) {
      std::uint32_t expected = 0;
      while (expected < query.size() && model[i].count(query[expected])) ++expected;
      ASSERT_EQ(depth_of(matches, i), expected) << "step " << step << " instance " << i;
      ASSERT_EQ(index.match_instance(i, query, 0), expected);
    }
  }
}

}  // namespace
}  // namespace omni::sched
