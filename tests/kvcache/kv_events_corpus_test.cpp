// Replays the fuzz corpus (fuzz/kv_events/corpus) through the decoder: each input must decode
// or fail cleanly, and whatever decodes must survive an encode/decode round trip unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {
namespace {

TEST(KvEventsCorpus, EveryInputDecodesOrFailsCleanly) {
  const std::filesystem::path dir = OMNI_KV_EVENTS_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::size_t files = 0;
  std::size_t decoded_ok = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<std::uint8_t> payload((std::istreambuf_iterator<char>(in)),
                                            std::istreambuf_iterator<char>());
    auto decoded = decode_batch(payload);
    if (!decoded.ok()) continue;
    ++decoded_ok;
    for (EventLayout layout : {EventLayout::kArray, EventLayout::kMap}) {
      auto again = decode_batch(encode_batch(decoded->batch, layout));
      ASSERT_TRUE(again.ok()) << entry.path();
      EXPECT_EQ(again->batch, decoded->batch) << entry.path();
    }
  }
  EXPECT_GE(files, 5u);
  EXPECT_GE(decoded_ok, 3u);
}

}  // namespace
}  // namespace omni::kvcache
