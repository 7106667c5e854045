// Replays the fuzz corpus (fuzz/kv_events/corpus) through the decoder: each input must decode
// or fail cleanly, and whatever decodes must survive an encode/decode round trip unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "omni/kvcache/kv_events.hpp"

#include "support/corpus.hpp"

namespace omni::kvcache {
namespace {

TEST(KvEventsCorpus, EveryInputDecodesOrFailsCleanly) {
  const std::filesystem::path dir = OMNI_KV_EVENTS_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::size_t files = 0;
  std::size_t decoded_ok = 0;
  for (const auto& file : omni::test_support::read_corpus(dir)) {
    ++files;
    const std::vector<std::uint8_t> payload(file.bytes.begin(), file.bytes.end());
    auto decoded = decode_batch(payload);
    if (!decoded.ok()) continue;
    ++decoded_ok;
    for (EventLayout layout : {EventLayout::kArray, EventLayout::kMap}) {
      auto again = decode_batch(encode_batch(decoded->batch, layout));
      ASSERT_TRUE(again.ok()) << file.path;
      EXPECT_EQ(again->batch, decoded->batch) << file.path;
    }
  }
  EXPECT_GE(files, 5u);
  EXPECT_GE(decoded_ok, 3u);
}

}  // namespace
}  // namespace omni::kvcache
