// The KV-event batch golden payloads: embedded (always runs) and from the shared files.
#include <gtest/gtest.h>

#include <numeric>

#include "golden_files.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {
namespace {

namespace json = boost::json;
using testing::from_hex;
using testing::to_hex;

// Spec §2.7, copied from vllm_kv_event_batch.hex (136 bytes).
constexpr const char* kReferenceBatchHex =
    "93cb41da556e40200000929cab426c6f636b53746f72656492cf6ec84ae048faaaa6cfafe70601eeca92c8c0dc"
    "0020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f10c0a3475055c092c0c000"
    "ae66756c6c5f617474656e74696f6ec094ac426c6f636b52656d6f76656491cfb2f6500e761427dda347505500"
    "00";

KVEventBatch reference_batch() {
  BlockStored stored;
  stored.block_hashes = {EventHash{7982712666671721126u}, EventHash{12675106281628537544u}};
  stored.token_ids.resize(32);
  std::iota(stored.token_ids.begin(), stored.token_ids.end(), 0u);
  stored.block_size = 16;
  stored.medium = "GPU";
  stored.extra_keys = std::vector<ExtraKeys>(2);
  stored.group_idx = 0;
  stored.kv_cache_spec_kind = "full_attention";
  BlockRemoved removed;
  removed.block_hashes = {EventHash{12895582606062790621u}};
  removed.medium = "GPU";
  removed.group_idx = 0;
  KVEventBatch batch;
  batch.ts = 1767225600.5;
  batch.events = {stored, removed};
  batch.data_parallel_rank = 0;
  return batch;
}

TEST(KvEventsGolden, EmbeddedReferenceBatchEncodesByteForByte) {
  const auto encoded = encode_batch(reference_batch());
  EXPECT_EQ(encoded.size(), 136u);
  EXPECT_EQ(to_hex(encoded), kReferenceBatchHex);
}

TEST(KvEventsGolden, EmbeddedReferenceBatchDecodes) {
  const auto payload = from_hex(kReferenceBatchHex);
  auto decoded = decode_batch(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
  EXPECT_EQ(decoded->batch, reference_batch());
  EXPECT_EQ(decoded->skipped_events, 0u);
}

TEST(KvEventsGolden, HexFileDecodesAndReencodesExactly) {
  std::string why;
  auto hex = testing::load_batch_hex(why);
  if (!hex) GTEST_SKIP() << why;
  const auto payload = from_hex(*hex);
  auto decoded = decode_batch(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
  EXPECT_EQ(decoded->batch, reference_batch());
  EXPECT_EQ(encode_batch(decoded->batch), payload);
}

// The "decoded" JSON view of the vectors file, compared field by field with our decode.
void expect_matches_json(const KVEventBatch& batch, const json::array& view) {
  ASSERT_EQ(view.size(), 3u);
  EXPECT_EQ(batch.ts, view[0].to_number<double>());
  EXPECT_EQ(batch.data_parallel_rank, view[2].to_number<std::int64_t>());
  const json::array& events = view[1].as_array();
  ASSERT_EQ(batch.events.size(), events.size());
  const auto& stored = std::get<BlockStored>(batch.events[0]);
  const json::array& s = events[0].as_array();
  ASSERT_EQ(s.size(), 12u);
  ASSERT_EQ(stored.block_hashes.size(), s[1].as_array().size());
  for (std::size_t i = 0; i < stored.block_hashes.size(); ++i) {
    EXPECT_EQ(std::get<std::uint64_t>(stored.block_hashes[i]),
              s[1].as_array()[i].to_number<std::uint64_t>());
  }
  EXPECT_TRUE(s[2].is_null());
  EXPECT_FALSE(stored.parent_block_hash.has_value());
  ASSERT_EQ(stored.token_ids.size(), s[3].as_array().size());
  for (std::size_t i = 0; i < stored.token_ids.size(); ++i) {
    EXPECT_EQ(stored.token_ids[i], s[3].as_array()[i].to_number<std::uint32_t>());
  }
  EXPECT_EQ(stored.block_size, s[4].to_number<std::int64_t>());
  EXPECT_EQ(stored.medium, std::string(s[6].as_string()));
  EXPECT_EQ(stored.extra_keys->size(), s[8].as_array().size());
  EXPECT_EQ(stored.group_idx, s[9].to_number<std::int64_t>());
  EXPECT_EQ(stored.kv_cache_spec_kind, std::string(s[10].as_string()));
  const auto& removed = std::get<BlockRemoved>(batch.events[1]);
  const json::array& r = events[1].as_array();
  EXPECT_EQ(std::get<std::uint64_t>(removed.block_hashes.at(0)),
            r[1].as_array().at(0).to_number<std::uint64_t>());
  EXPECT_EQ(removed.medium, std::string(r[2].as_string()));
  EXPECT_EQ(removed.group_idx, r[3].to_number<std::int64_t>());
}

TEST(KvEventsGolden, VectorsFileBatchExamples) {
  std::string why;
  auto vectors = testing::load_vectors(why);
  if (!vectors) GTEST_SKIP() << why;
  const json::object& example = vectors->at("kv_event_batch_example").as_object();
  const auto payload = from_hex(example.at("payload_hex").as_string());
  EXPECT_EQ(payload.size(), example.at("payload_len").to_number<std::size_t>());
  const json::object& frames = example.at("zmq_multipart_frames_hex").as_object();
  EXPECT_EQ(frames.at("payload").as_string(), example.at("payload_hex").as_string());
  EXPECT_EQ(frames.at("seq").as_string(), "0000000000000000");
  auto decoded = decode_batch(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
  expect_matches_json(decoded->batch, example.at("decoded").as_array());
  EXPECT_EQ(encode_batch(decoded->batch), payload);

  // The tagged-map variant decodes to the same batch and our map encoder reproduces it.
  const json::object& map_example = vectors->at("kv_event_batch_example_map_layout").as_object();
  const auto map_payload = from_hex(map_example.at("payload_hex").as_string());
  EXPECT_EQ(map_payload.size(), map_example.at("payload_len").to_number<std::size_t>());
  auto map_decoded = decode_batch(map_payload);
  ASSERT_TRUE(map_decoded.ok()) << map_decoded.error().to_string();
  EXPECT_EQ(map_decoded->batch, decoded->batch);
  EXPECT_EQ(to_hex(encode_batch(map_decoded->batch, EventLayout::kMap)),
            map_example.at("payload_hex").as_string());
}

}  // namespace
}  // namespace omni::kvcache
