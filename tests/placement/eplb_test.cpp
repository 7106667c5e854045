#include "omni/placement/eplb.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.hpp"

namespace omni::placement {
namespace {

LoadMatrix readme_weights() {
  std::vector<double> w = {90, 132, 40,  61, 104, 165, 39,  4,   73,  56, 183, 86,
                           20, 107, 104, 64, 19,  197, 187, 157, 172, 86, 16,  27};
  return LoadMatrix::make(2, 12, std::move(w)).value();
}

// The worked example printed in deepseek-ai/EPLB's README.
TEST(EplbTest, ReproducesReadmeExample) {
  auto result = eplb_rebalance(readme_weights(), EplbParams{16, 4, 2, 8});
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  const std::vector<std::vector<ExpertId>> expected = {
      {5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1},
      {7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1}};
  EXPECT_EQ(result->phy2log, expected);
  const std::vector<std::vector<std::size_t>> expected_cnt = {{1, 2, 1, 1, 2, 2, 1, 1, 1, 1, 2, 1},
                                                              {1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1}};
  EXPECT_EQ(result->logcnt, expected_cnt);
  EXPECT_EQ(result->max_logcnt, 2u);
}

TEST(EplbTest, Log2PhyIsTheInverseOfPhy2Log) {
  auto result = eplb_rebalance(readme_weights(), EplbParams{16, 4, 2, 8});
  ASSERT_TRUE(result.ok());
  for (std::size_t l = 0; l < 2; ++l) {
    for (std::size_t e = 0; e < 12; ++e) {
      std::size_t present = 0;
      for (std::int64_t phy : result->log2phy[l][e]) {
        if (phy < 0) continue;
        ++present;
        EXPECT_EQ(result->phy2log[l][static_cast<std::size_t>(phy)], static_cast<ExpertId>(e));
      }
      EXPECT_EQ(present, result->logcnt[l][e]);
    }
  }
}

TEST(EplbTest, PropertiesOverRandomInputs) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    SeededRandom random(seed);
    const auto nodes = static_cast<std::size_t>(random.uniform_int(1, 3));
    const std::size_t gpus = nodes * static_cast<std::size_t>(random.uniform_int(1, 4));
    const std::size_t groups = nodes * static_cast<std::size_t>(random.uniform_int(1, 3));
    const std::size_t experts = groups * static_cast<std::size_t>(random.uniform_int(1, 4));
    const std::size_t per_gpu =
        (experts + gpus - 1) / gpus + static_cast<std::size_t>(random.uniform_int(0, 2));
    const LoadMatrix loads = testing::random_loads(3, experts, random);
    auto result = eplb_rebalance(loads, EplbParams{gpus * per_gpu, groups, nodes, gpus});
    ASSERT_TRUE(result.ok()) << result.error().to_string();
    for (std::size_t l = 0; l < 3; ++l) {
      ASSERT_EQ(result->phy2log[l].size(), gpus * per_gpu);
      std::vector<std::size_t> seen(experts, 0);
      for (ExpertId e : result->phy2log[l]) ++seen[static_cast<std::size_t>(e)];
      EXPECT_EQ(seen, result->logcnt[l]) << "seed " << seed;
      for (std::size_t e = 0; e < experts; ++e) {
        EXPECT_GE(seen[e], 1u);
        for (std::size_t r = 0; r < result->max_logcnt; ++r) {
          const std::int64_t phy = result->log2phy[l][e][r];
          EXPECT_EQ(phy >= 0, r < seen[e]);
          if (phy >= 0) {
            EXPECT_EQ(result->phy2log[l][static_cast<std::size_t>(phy)], static_cast<ExpertId>(e));
          }
        }
      }
    }
    EXPECT_TRUE(result->to_placement(gpus).validate(true).ok());
  }
}

TEST(EplbTest, GlobalPolicyWhenGroupsDoNotDivideNodes) {
  // 3 groups on 2 nodes: EPLB falls back to the global policy (one node, one group).
  LoadMatrix loads = LoadMatrix::make(1, 6, {10, 50, 20, 30, 5, 40}).value();
  auto global = eplb_rebalance(loads, EplbParams{8, 3, 2, 4});
  auto flat = eplb_rebalance(loads, EplbParams{8, 1, 1, 4});
  ASSERT_TRUE(global.ok());
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(global->phy2log, flat->phy2log);
  // Replication by load per copy: 50 and 40 get the two extra copies.
  EXPECT_EQ(global->logcnt[0], (std::vector<std::size_t>{1, 2, 1, 1, 1, 2}));
}

TEST(EplbTest, BalancedPackingFillsLightestPackFirstWithStableTies) {
  const std::vector<float> w = {5, 5, 3, 3};
  const Packing p = balanced_packing(w, 2);
  EXPECT_EQ(p.pack_index, (std::vector<std::size_t>{0, 1, 0, 1}));
  EXPECT_EQ(p.rank_in_pack, (std::vector<std::size_t>{0, 0, 1, 1}));
}

TEST(EplbTest, ReplicateGivesCopiesToHighestLoadPerCopy) {
  const std::vector<float> w = {9, 4, 1};
  const Replication r = replicate_experts(w, 6);
  // 9 beats 4; then 4.5 beats 4; then 4 beats 3.
  EXPECT_EQ(r.phy2log, (std::vector<ExpertId>{0, 1, 2, 0, 0, 1}));
  EXPECT_EQ(r.rank, (std::vector<std::size_t>{0, 0, 0, 1, 2, 1}));
  EXPECT_EQ(r.logcnt, (std::vector<std::size_t>{3, 2, 1}));
  // On a tie (4 / 1 == 8 / 2) the lowest index wins, as torch.max does.
  const std::vector<float> tie = {4, 8};
  EXPECT_EQ(replicate_experts(tie, 3).phy2log, (std::vector<ExpertId>{0, 1, 1}));
  EXPECT_EQ(replicate_experts(tie, 4).phy2log, (std::vector<ExpertId>{0, 1, 1, 0}));
}

TEST(EplbTest, RejectsImpossibleShapes) {
  auto loads = readme_weights();
  EXPECT_FALSE(eplb_rebalance(loads, EplbParams{8, 4, 2, 8}).ok());   // fewer slots than experts
  EXPECT_FALSE(eplb_rebalance(loads, EplbParams{18, 4, 2, 8}).ok());  // not a multiple of gpus
  EXPECT_FALSE(eplb_rebalance(loads, EplbParams{16, 5, 1, 8}).ok());  // 12 % 5 != 0
  EXPECT_FALSE(eplb_rebalance(loads, EplbParams{16, 4, 3, 8}).ok());  // 8 % 3 != 0
  EXPECT_FALSE(eplb_rebalance(loads, EplbParams{16, 4, 2, 0}).ok());
}

TEST(EplbTest, PlacementFromTopology) {
  Topology topo{2, 8, 2};
  auto placement = eplb_plan(readme_weights(), topo, 4);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(placement->layers.size(), 2u);
  EXPECT_EQ(placement->layers[0].slots_per_device, 2u);
  EXPECT_TRUE(placement->validate(true).ok());
}

}  // namespace
}  // namespace omni::placement
