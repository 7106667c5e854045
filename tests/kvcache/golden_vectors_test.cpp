// Every hashing value in vllm_vectors.json: NONE_HASH per algorithm, every block of every
// sequence per algorithm (parent, pre-image, hash, event int) and the extra-keys examples.
#include <gtest/gtest.h>

#include "golden_files.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "omni/kvcache/preimage.hpp"

namespace omni::kvcache {
namespace {

namespace json = boost::json;
using testing::from_hex;
using testing::to_hex;

class GoldenVectors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto loaded = testing::load_vectors(why);
    if (!loaded) GTEST_SKIP() << why;
    vectors_ = std::move(*loaded);
  }
  const json::object& root() const { return vectors_.as_object(); }

  json::value vectors_;
};

std::vector<std::uint32_t> tokens_of(const json::value& list) {
  std::vector<std::uint32_t> tokens;
  for (const json::value& t : list.as_array()) tokens.push_back(json::value_to<std::uint32_t>(t));
  return tokens;
}

HashAlgo algo_of(std::string_view name) {
  auto algo = parse_hash_algo(name);
  EXPECT_TRUE(algo.ok()) << name;
  return algo.value_or(HashAlgo::kSha256);
}

ExtraKeys extra_keys_of(const json::value& value) {
  ExtraKeys keys;
  if (value.is_null()) return keys;
  for (const json::value& item : value.as_array()) {
    if (item.is_string()) {
      keys.items.emplace_back(std::string(item.as_string()));
    } else {
      const json::array& pair = item.as_array();
      keys.items.emplace_back(MmExtraKey{std::string(pair.at(0).as_string()),
                                         json::value_to<std::int64_t>(pair.at(1))});
    }
  }
  return keys;
}

// Checks one algorithm's block list against a chain computed from `tokens` and `per_block_keys`.
void check_blocks(HashAlgo algo, const std::vector<std::uint32_t>& tokens,
                  const std::vector<ExtraKeys>& per_block_keys, const json::array& blocks,
                  std::size_t block_size) {
  BlockHash parent = none_hash(algo, "0");
  std::vector<std::uint8_t> preimage;
  ASSERT_EQ(blocks.size(), tokens.size() / block_size);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    SCOPED_TRACE(std::string(hash_algo_name(algo)) + " block " + std::to_string(i));
    const json::object& block = blocks[i].as_object();
    EXPECT_EQ(json::value_to<std::size_t>(block.at("index")), i);
    EXPECT_EQ(parent.hex(), block.at("parent_hash_hex").as_string());
    const auto block_tokens = std::span(tokens).subspan(i * block_size, block_size);
    const ExtraKeys& keys = per_block_keys.at(i);
    block_preimage(algo, parent.bytes(), block_tokens, keys, preimage);
    EXPECT_EQ(to_hex(preimage), block.at("preimage_hex").as_string());
    const BlockHash hash = hash_block(algo, parent, block_tokens, keys);
    EXPECT_EQ(hash.hex(), block.at("hash_hex").as_string());
    EXPECT_EQ(event_int(hash), json::value_to<std::uint64_t>(block.at("event_int")));
    parent = hash;
  }
}

TEST_F(GoldenVectors, NoneHashOfEveryAlgorithm) {
  const json::object& none = root().at("none_hash").as_object();
  ASSERT_EQ(none.size(), 4u);
  std::vector<std::uint8_t> preimage;
  for (const auto& [name, entry] : none) {
    const HashAlgo algo = algo_of(name);
    if (uses_cbor(algo)) {
      cbor_str_preimage("0", preimage);
    } else {
      pickle_str_preimage("0", preimage);
    }
    EXPECT_EQ(to_hex(preimage), entry.at("preimage_hex").as_string()) << name;
    EXPECT_EQ(none_hash(algo, "0").hex(), entry.at("hash_hex").as_string()) << name;
  }
}

TEST_F(GoldenVectors, EveryBlockOfEverySequence) {
  const std::size_t block_size = json::value_to<std::size_t>(root().at("block_size"));
  const json::object& sequences = root().at("sequences").as_object();
  ASSERT_EQ(sequences.size(), 4u);
  for (const auto& [name, seq] : sequences) {
    SCOPED_TRACE(std::string(name));
    const auto tokens = tokens_of(seq.at("token_ids"));
    const std::size_t full = json::value_to<std::size_t>(seq.at("num_full_blocks"));
    EXPECT_EQ(json::value_to<std::size_t>(seq.at("num_unhashed_tail_tokens")),
              tokens.size() - full * block_size);
    const std::vector<ExtraKeys> no_keys(full);
    const json::object& algos = seq.at("algos").as_object();
    ASSERT_EQ(algos.size(), 4u);
    for (const auto& [algo_name, entry] : algos) {
      const HashAlgo algo = algo_of(algo_name);
      const json::array& blocks = entry.at("blocks").as_array();
      check_blocks(algo, tokens, no_keys, blocks, block_size);
      // The chain computed by BlockHasher agrees block-for-block.
      BlockHasher hasher(algo, block_size, none_hash(algo, "0"));
      const auto chain = hasher.hash_all(tokens);
      ASSERT_EQ(chain.size(), full);
      for (std::size_t i = 0; i < full; ++i) {
        EXPECT_EQ(chain[i].hex(), blocks[i].at("hash_hex").as_string()) << algo_name << " " << i;
      }
    }
  }
}

TEST_F(GoldenVectors, ExtraKeysExamples) {
  const std::size_t block_size = json::value_to<std::size_t>(root().at("block_size"));
  const json::object& examples = root().at("extra_keys_examples").as_object();
  ASSERT_EQ(examples.size(), 2u);
  for (const auto& [name, example] : examples) {
    SCOPED_TRACE(std::string(name));
    const auto tokens = tokens_of(example.at("token_ids"));
    std::vector<ExtraKeys> per_block;
    for (const json::value& keys : example.at("extra_keys_per_block").as_array()) {
      per_block.push_back(extra_keys_of(keys));
    }
    for (const auto& [algo_name, entry] : example.at("algos").as_object()) {
      check_blocks(algo_of(algo_name), tokens, per_block, entry.at("blocks").as_array(),
                   block_size);
    }
  }
}

// The request-level inputs behind the two examples yield the same per-block keys, and the
// BlockHasher chain with those inputs matches the golden hashes.
TEST_F(GoldenVectors, ExtraKeysDerivedFromRequestInputs) {
  const json::object& examples = root().at("extra_keys_examples").as_object();
  RequestExtraInputs lora_salt;
  lora_salt.lora_name = "sql-lora";
  lora_salt.cache_salt = "salt-123";
  RequestExtraInputs image;
  image.mm_items.push_back(MmItem{"a1b2c3d4e5f6", 4, 8});
  const std::pair<const char*, const RequestExtraInputs*> cases[] = {
      {"lora_sql-lora_plus_cache_salt_salt-123", &lora_salt},
      {"mm_item_a1b2c3d4e5f6_at_offset_4_of_block0", &image},
  };
  for (const auto& [name, inputs] : cases) {
    SCOPED_TRACE(name);
    const json::value& example = examples.at(name);
    const json::array& expected = example.at("extra_keys_per_block").as_array();
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(block_extra_keys(*inputs, i * 16, 16), extra_keys_of(expected[i])) << i;
    }
    const auto tokens = tokens_of(example.at("token_ids"));
    for (const auto& [algo_name, entry] : example.at("algos").as_object()) {
      const HashAlgo algo = algo_of(algo_name);
      BlockHasher hasher(algo, 16, none_hash(algo, "0"));
      const auto chain = hasher.hash_all(tokens, *inputs);
      const json::array& blocks = entry.at("blocks").as_array();
      ASSERT_EQ(chain.size(), blocks.size());
      for (std::size_t i = 0; i < chain.size(); ++i) {
        EXPECT_EQ(chain[i].hex(), blocks[i].at("hash_hex").as_string()) << algo_name << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace omni::kvcache
