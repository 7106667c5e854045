// Replays fuzz/prefix_index/corpus through the event feed on every build: each payload is either
// applied or counted as dropped, and the index stays consistent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "omni/sched/event_feed.hpp"

#include "support/corpus.hpp"

namespace omni::sched {
namespace {

TEST(PrefixIndexCorpus, EveryPayloadIsAppliedOrDroppedCleanly) {
  const std::filesystem::path dir(OMNI_PREFIX_INDEX_CORPUS_DIR);
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
  PrefixIndex index;
  EventFeedStats stats;
  std::size_t files = 0;
  for (const auto& file : omni::test_support::read_corpus(dir)) {
    const std::vector<std::uint8_t> bytes(file.bytes.begin(), file.bytes.end());
    feed_payload(index, static_cast<InstanceId>(files % 4), bytes, 0.0, stats);
    ++files;
  }
  ASSERT_GT(files, 0u);
  EXPECT_EQ(stats.applied + stats.dropped, files);
  EXPECT_GT(stats.applied, 0u);  // the seeds include valid batches
}

TEST(PrefixIndexCorpus, MalformedPayloadsChangeNothing) {
  PrefixIndex index;
  EventFeedStats stats;
  index.stored(1, std::vector<std::uint64_t>{5, 6}, 0);
  const std::vector<std::uint8_t> garbage = {0x93, 0xcb, 0x00, 0x01};  // truncated batch
  EXPECT_FALSE(feed_payload(index, 1, garbage, 0, stats));
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(index.match_instance(1, std::vector<std::uint64_t>{5, 6}, 0), 2u);
}

}  // namespace
}  // namespace omni::sched
