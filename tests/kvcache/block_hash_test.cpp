// Hashing API behaviour, with golden constants embedded (copied from vllm_vectors.json) so these
// run even where the shared golden files are absent.
#include <gtest/gtest.h>

#include <numeric>

#include "omni/kvcache/block_hash.hpp"

namespace omni::kvcache {
namespace {

struct EmbeddedGolden {
  HashAlgo algo;
  const char* none_hash_hex;
  const char* block0_hex;  // sequence (a) = tokens 0..63, block 0
  std::uint64_t block0_event_int;
};

constexpr EmbeddedGolden kGolden[] = {
    {HashAlgo::kSha256, "1973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c",
     "6358e31578a64b75ebe28cdb99d3beae65de82a2087321dc6ec84ae048faaaa6", 7982712666671721126u},
    {HashAlgo::kSha256Cbor, "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e",
     "d830de3d42c00f25a2949b5d12d98642664a44872c1614c5b0147556276afc9c", 12687895063098490012u},
    {HashAlgo::kXxhash, "6fb31cc38bba6066183f7f2104b9c051", "8ef953407c0da43eacbb3639ed2bff4d",
     12446601617588617037u},
    {HashAlgo::kXxhashCbor, "1ebe36576dcb573f26b99533a20aaeca", "209f5d549fc07c8e39d823615ede61ce",
     4168120356241826254u},
};

std::vector<std::uint32_t> iota_tokens(std::size_t n, std::uint32_t first = 0) {
  std::vector<std::uint32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

TEST(BlockHash, EmbeddedGoldenValues) {
  const auto tokens = iota_tokens(64);
  for (const EmbeddedGolden& g : kGolden) {
    SCOPED_TRACE(std::string(hash_algo_name(g.algo)));
    const BlockHash root = none_hash(g.algo, "0");
    EXPECT_EQ(root.hex(), g.none_hash_hex);
    EXPECT_EQ(root.size(), digest_size(g.algo));
    BlockHasher hasher(g.algo, 16, root);
    const auto chain = hasher.hash_all(tokens);
    ASSERT_EQ(chain.size(), 4u);
    EXPECT_EQ(chain[0].hex(), g.block0_hex);
    EXPECT_EQ(event_int(chain[0]), g.block0_event_int);
  }
}

TEST(BlockHash, ParseHashAlgo) {
  for (std::string_view name : {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"}) {
    auto algo = parse_hash_algo(name);
    ASSERT_TRUE(algo.ok()) << name;
    EXPECT_EQ(hash_algo_name(*algo), name);
  }
  for (std::string_view bad : {"", "builtin", "sha256_cbor_64bit", "SHA256", "xxhash "}) {
    auto algo = parse_hash_algo(bad);
    ASSERT_FALSE(algo.ok()) << bad;
    EXPECT_EQ(algo.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(BlockHash, FromBytesAndHex) {
  EXPECT_FALSE(BlockHash::from_bytes({}).ok());
  const std::vector<std::uint8_t> too_long(33, 1);
  EXPECT_FALSE(BlockHash::from_bytes(too_long).ok());
  EXPECT_FALSE(BlockHash::from_hex("abc").ok());
  EXPECT_FALSE(BlockHash::from_hex("zz").ok());
  auto hash = BlockHash::from_hex("00FFab");
  ASSERT_TRUE(hash.ok());
  EXPECT_EQ(hash->hex(), "00ffab");
  EXPECT_EQ(hash->size(), 3u);
}

TEST(BlockHash, EventIntIsLastEightBytesBigEndian) {
  auto hash = BlockHash::from_hex("ffffffffffffffff0102030405060708");
  ASSERT_TRUE(hash.ok());
  EXPECT_EQ(event_int(*hash), 0x0102030405060708u);
  auto short_hash = BlockHash::from_hex("0102");
  ASSERT_TRUE(short_hash.ok());
  EXPECT_EQ(event_int(*short_hash), 0x0102u);
}

TEST(BlockHash, PythonHashSeedChangesTheRoot) {
  EXPECT_NE(none_hash(HashAlgo::kSha256, "0"), none_hash(HashAlgo::kSha256, "1"));
  EXPECT_EQ(none_hash(HashAlgo::kXxhash, "42"), none_hash(HashAlgo::kXxhash, "42"));
}

TEST(BlockHasher, ExtendHashesOnlyNewlyCompletedBlocks) {
  const auto tokens = iota_tokens(100);
  for (const EmbeddedGolden& g : kGolden) {
    BlockHasher hasher(g.algo, 16, none_hash(g.algo, "0"));
    const auto whole = hasher.hash_all(tokens);
    ASSERT_EQ(whole.size(), 6u);  // 4 trailing tokens are not hashed
    std::vector<BlockHash> grown;
    for (std::size_t n = 0; n <= tokens.size(); n += 7) {
      hasher.extend(std::span(tokens).first(n), {}, grown);
      EXPECT_EQ(grown.size(), n / 16);
    }
    hasher.extend(tokens, {}, grown);
    EXPECT_EQ(grown, whole);
  }
}

TEST(BlockHasher, ChainingMakesEqualBlocksDiffer) {
  const std::vector<std::uint32_t> sevens(48, 7);
  BlockHasher hasher(HashAlgo::kSha256, 16, none_hash(HashAlgo::kSha256, "0"));
  const auto chain = hasher.hash_all(sevens);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_NE(chain[0], chain[1]);
  EXPECT_NE(chain[1], chain[2]);
}

TEST(BlockHasher, ExtraKeysChangeTheHash) {
  const auto tokens = iota_tokens(32);
  BlockHasher hasher(HashAlgo::kSha256Cbor, 16, none_hash(HashAlgo::kSha256Cbor, "0"));
  RequestExtraInputs salted;
  salted.cache_salt = "s";
  const auto plain = hasher.hash_all(tokens);
  const auto with_salt = hasher.hash_all(tokens, salted);
  EXPECT_NE(plain[0], with_salt[0]);  // the salt enters block 0 ...
  EXPECT_NE(plain[1], with_salt[1]);  // ... and, through the chain, every later block
}

TEST(BlockExtraKeys, OrderAndPlacement) {
  RequestExtraInputs inputs;
  inputs.lora_name = "lora";
  inputs.cache_salt = "salt";
  inputs.mm_items.push_back(MmItem{"img", 10, 20});  // tokens 10..29: blocks 0 and 1
  const ExtraKeys block0 = block_extra_keys(inputs, 0, 16);
  ASSERT_EQ(block0.items.size(), 3u);
  EXPECT_EQ(std::get<std::string>(block0.items[0]), "lora");
  EXPECT_EQ(std::get<MmExtraKey>(block0.items[1]), (MmExtraKey{"img", 10}));
  EXPECT_EQ(std::get<std::string>(block0.items[2]), "salt");
  const ExtraKeys block1 = block_extra_keys(inputs, 16, 16);
  ASSERT_EQ(block1.items.size(), 2u);
  EXPECT_EQ(std::get<MmExtraKey>(block1.items[1]), (MmExtraKey{"img", -6}));
  const ExtraKeys block2 = block_extra_keys(inputs, 32, 16);
  ASSERT_EQ(block2.items.size(), 1u);  // LoRA only
  EXPECT_TRUE(block_extra_keys({}, 0, 16).empty());
}

}  // namespace
}  // namespace omni::kvcache
