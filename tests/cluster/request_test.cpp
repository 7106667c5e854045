#include <gtest/gtest.h>

#include "omni/cluster/request.hpp"

namespace omni::cluster {
namespace {

ClusterRequest request(std::uint64_t id, std::uint32_t tokens, std::vector<std::uint64_t> ids) {
  return ClusterRequest{id, 0.0, tokens, 8, std::move(ids)};
}

TEST(EngineBlockHashes, OneHashPerFullEngineBlock) {
  auto hashes = engine_block_hashes(request(1, 1000, {7, 8}), 64);
  ASSERT_TRUE(hashes.ok());
  EXPECT_EQ(hashes->size(), 1000u / 64u);
}

TEST(EngineBlockHashes, SharedTraceIdsGiveSharedPrefixesOnly) {
  auto a = engine_block_hashes(request(1, 1536, {1, 2, 3}), 16);
  auto b = engine_block_hashes(request(2, 1536, {1, 2, 9}), 16);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 96u);
  for (std::size_t i = 0; i < 64; ++i) EXPECT_EQ((*a)[i], (*b)[i]) << "block " << i;
  for (std::size_t i = 64; i < 96; ++i) EXPECT_NE((*a)[i], (*b)[i]) << "block " << i;
}

TEST(EngineBlockHashes, ChainingMakesEqualIdsAfterADifferenceDiffer) {
  auto a = engine_block_hashes(request(1, 1024, {1, 5}), 512);
  auto b = engine_block_hashes(request(2, 1024, {2, 5}), 512);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)[1], (*b)[1]);
}

TEST(EngineBlockHashes, PromptsWithoutIdsAreUniquePerRequest) {
  auto a = engine_block_hashes(request(1, 256, {}), 64);
  auto b = engine_block_hashes(request(2, 256, {}), 64);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 4u);
  EXPECT_NE((*a)[0], (*b)[0]);
  EXPECT_EQ(*a, *engine_block_hashes(request(1, 256, {}), 64));
}

TEST(EngineBlockHashes, RejectsBlockSizesThatDoNotDivideTheTraceBlock) {
  auto hashes = engine_block_hashes(request(1, 1000, {1, 2}), 48);
  ASSERT_FALSE(hashes.ok());
  EXPECT_EQ(hashes.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(engine_block_hashes(request(1, 1000, {1}), 0).ok());
}

}  // namespace
}  // namespace omni::cluster
