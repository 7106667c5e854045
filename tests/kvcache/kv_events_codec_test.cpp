// Encoder/decoder round trips and the lenient decoding of older and newer layouts.
#include <gtest/gtest.h>

#include "golden_files.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {
namespace {

using testing::from_hex;
using testing::to_hex;

DecodedBatch decode_ok(const std::vector<std::uint8_t>& payload) {
  auto decoded = decode_batch(payload);
  EXPECT_TRUE(decoded.ok()) << decoded.error().to_string();
  return decoded.ok() ? std::move(decoded).value() : DecodedBatch{};
}

BlockStored rich_stored() {
  BlockStored e;
  e.block_hashes = {EventHash{std::uint64_t{5}}, EventHash{std::vector<std::uint8_t>(32, 0xab)},
                    EventHash{std::uint64_t{1} << 40}};
  e.parent_block_hash = EventHash{std::vector<std::uint8_t>(16, 0x01)};
  for (std::uint32_t t = 0; t < 48; ++t) e.token_ids.push_back(t * 100000u);
  e.block_size = 16;
  e.lora_id = 3;
  e.medium = "CPU";
  e.lora_name = "a-fairly-long-lora-adapter-name-over-32-bytes";
  ExtraKeys block0;
  block0.items = {std::string("lora"), MmExtraKey{"img", -7}, std::vector<std::uint8_t>{1, 2}};
  e.extra_keys = std::vector<ExtraKeys>{block0, ExtraKeys{}, ExtraKeys{}};
  e.group_idx = 2;
  e.kv_cache_spec_kind = "sliding_window";
  e.kv_cache_spec_sliding_window = 4096;
  return e;
}

TEST(KvEventsCodec, RoundTripBothLayouts) {
  KVEventBatch batch;
  batch.ts = -0.25;
  batch.events = {rich_stored(), BlockRemoved{{EventHash{~std::uint64_t{0}}}, std::nullopt, -1},
                  AllBlocksCleared{}, BlockStored{}};
  batch.data_parallel_rank = 7;
  for (EventLayout layout : {EventLayout::kArray, EventLayout::kMap}) {
    const auto payload = encode_batch(batch, layout);
    EXPECT_EQ(decode_ok(payload).batch, batch);
  }
}

TEST(KvEventsCodec, EncodeAppendsToTheBuffer) {
  std::vector<std::uint8_t> out{0xff};
  encode_batch(KVEventBatch{}, out);
  EXPECT_EQ(to_hex(out), "ff93cb000000000000000090c0");  // [0.0, [], nil]
}

TEST(KvEventsCodec, SmallestIntegerForms) {
  BlockRemoved e;
  e.block_hashes = {EventHash{std::uint64_t{127}}, EventHash{std::uint64_t{128}},
                    EventHash{std::uint64_t{256}}, EventHash{std::uint64_t{65536}}};
  e.group_idx = -33;
  KVEventBatch batch;
  batch.events = {e};
  batch.data_parallel_rank = -1;
  EXPECT_EQ(to_hex(encode_batch(batch)),
            "93cb0000000000000000"
            "91"
            "94ac426c6f636b52656d6f766564"
            "947fcc80cd0100ce00010000"
            "c0"
            "d0df"
            "ff");
}

TEST(KvEventsCodec, LargeArraysUseArray16And32) {
  BlockStored e;
  e.token_ids.assign(70000, 1);
  e.block_hashes.assign(20, EventHash{std::uint64_t{1}});
  KVEventBatch batch;
  batch.events = {e};
  const auto payload = encode_batch(batch);
  EXPECT_EQ(decode_ok(payload).batch, batch);
  const std::string hex = to_hex(payload);
  EXPECT_NE(hex.find("dc001401"), std::string::npos);      // 20 hashes: array16
  EXPECT_NE(hex.find("dd0001117001"), std::string::npos);  // 70000 tokens: array32
}

TEST(KvEventsCodec, OldestLayoutsDecode) {
  // 2025-04: batch [ts, events]; BlockStored with 6 elements; BlockRemoved [tag, hashes].
  const auto payload = from_hex(
      "92cb3ff0000000000000"
      "92"
      "96ab426c6f636b53746f72656491cd04d2c0920102"
      "02"
      "c0"
      "92ac426c6f636b52656d6f76656491d3fffffffffffffff6");
  const DecodedBatch decoded = decode_ok(payload);
  EXPECT_EQ(decoded.batch.ts, 1.0);
  EXPECT_FALSE(decoded.batch.data_parallel_rank.has_value());
  ASSERT_EQ(decoded.batch.events.size(), 2u);
  const auto& stored = std::get<BlockStored>(decoded.batch.events[0]);
  EXPECT_EQ(stored.block_hashes, (std::vector<EventHash>{EventHash{std::uint64_t{1234}}}));
  EXPECT_EQ(stored.token_ids, (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(stored.block_size, 2);
  EXPECT_FALSE(stored.medium.has_value());
  EXPECT_FALSE(stored.extra_keys.has_value());
  const auto& removed = std::get<BlockRemoved>(decoded.batch.events[1]);
  // A legacy signed `builtin` hash keeps its two's-complement bits.
  EXPECT_EQ(std::get<std::uint64_t>(removed.block_hashes.at(0)), static_cast<std::uint64_t>(-10));
}

TEST(KvEventsCodec, UnknownTagsAndExtraFieldsAreSkipped) {
  const auto payload = from_hex(
      "94ca3f800000"  // float32 ts 1.0, 4 batch fields
      "93"
      "93a54e6577457681a178910101"  // ["NewEv", {"x": [1]}, 1]: unknown, skipped
      "82a474797065a3466f6fa17ac0"  // {"type": "Foo", "z": nil}: unknown map, skipped
      "95ac426c6f636b52656d6f7665649102a3475055"
      "01"
      "c3"  // extra trailing field (true)
      "00"
      "a56578747261");  // an unknown fourth batch field
  const DecodedBatch decoded = decode_ok(payload);
  EXPECT_EQ(decoded.batch.ts, 1.0);
  EXPECT_EQ(decoded.skipped_events, 2u);
  ASSERT_EQ(decoded.batch.events.size(), 1u);
  const auto& removed = std::get<BlockRemoved>(decoded.batch.events[0]);
  EXPECT_EQ(removed.group_idx, 1);
  EXPECT_EQ(decoded.batch.data_parallel_rank, 0);
}

TEST(KvEventsCodec, MapEventsInAnyKeyOrderWithUnknownKeys) {
  // {"block_hashes": [bin 2], "locality": "LOCAL", "type": "BlockRemoved", "medium": nil}
  const auto payload = from_hex(
      "93cb000000000000000091"
      "84ac626c6f636b5f68617368657391c4020a0b"
      "a86c6f63616c697479a54c4f43414c"
      "a474797065ac426c6f636b52656d6f766564"
      "a66d656469756dc0"
      "00");
  const DecodedBatch decoded = decode_ok(payload);
  ASSERT_EQ(decoded.batch.events.size(), 1u);
  const auto& removed = std::get<BlockRemoved>(decoded.batch.events[0]);
  EXPECT_EQ(removed.block_hashes,
            (std::vector<EventHash>{EventHash{std::vector<std::uint8_t>{0x0a, 0x0b}}}));
  EXPECT_FALSE(removed.medium.has_value());
}

TEST(KvEventsCodec, IntegerTimestampIsAccepted) {
  const DecodedBatch decoded = decode_ok(from_hex("93cd07d09000"));
  EXPECT_EQ(decoded.batch.ts, 2000.0);
  EXPECT_TRUE(decoded.batch.events.empty());
}

}  // namespace
}  // namespace omni::kvcache
