#include "omni/placement/routing.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "omni/placement/balanced.hpp"
#include "omni/placement/eplb.hpp"
#include "test_util.hpp"

namespace omni::placement {
namespace {

std::vector<std::uint32_t> as_vector(std::span<const std::uint32_t> s) {
  return {s.begin(), s.end()};
}

// 2 nodes x 2 devices, 2 slots each; expert 0 on devices 0 and 2, expert 1 on device 1 and 3.
const LayerPlacement kLayer{2, {0, 2, 1, 3, 0, 4, 1, 5}};
const Topology kTopo{2, 4, 2};

TEST(RoutingTest, LocalFirstThenSameNodeThenSpread) {
  const LayerRouting r = LayerRouting::build(kLayer, kTopo, 6, RoutingPolicy::kLocalityFirst);
  EXPECT_EQ(as_vector(r.targets(0, 0)), (std::vector<std::uint32_t>{0}));  // local copy
  EXPECT_EQ(as_vector(r.targets(1, 0)), (std::vector<std::uint32_t>{0}));  // same node
  EXPECT_EQ(as_vector(r.targets(3, 0)), (std::vector<std::uint32_t>{4}));  // same node
  EXPECT_EQ(as_vector(r.targets(0, 3)), (std::vector<std::uint32_t>{3}));  // only copy
  EXPECT_EQ(as_vector(r.targets(2, 2)), (std::vector<std::uint32_t>{1}));  // remote only copy
  const LayerRouting even = LayerRouting::build(kLayer, kTopo, 6, RoutingPolicy::kEvenSplit);
  EXPECT_EQ(as_vector(even.targets(0, 0)), (std::vector<std::uint32_t>{0, 4}));
}

TEST(RoutingTest, SpreadsOverAllCopiesWhenNodeHasNone) {
  // Expert 0 on devices 0 and 1 (node 0): node 1's devices spread over both copies.
  const LayerPlacement layer{1, {0, 0, 1, 2}};
  const LayerRouting r = LayerRouting::build(layer, kTopo, 3, RoutingPolicy::kLocalityFirst);
  EXPECT_EQ(as_vector(r.targets(2, 0)), (std::vector<std::uint32_t>{0, 1}));
  const std::vector<double> loads = {400, 100, 100};
  const auto per_device = device_loads(layer, loads, kTopo);
  // Devices 0 and 1 take their own 100 plus half of node 1's 200 each.
  EXPECT_DOUBLE_EQ(per_device[0], 200.0);
  EXPECT_DOUBLE_EQ(per_device[1], 200.0);
}

TEST(RoutingTest, MetricsOnHandExample) {
  const std::vector<double> loads = {80, 40, 10, 10, 20, 20};
  Placement p{4, 6, {kLayer}};
  auto lm = LoadMatrix::make(1, 6, loads);
  ASSERT_TRUE(lm.ok());
  auto m = evaluate(p, *lm, kTopo);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  // Device loads: d0 = 40 + 10, d1 = 20 + 10, d2 = 40 + 20, d3 = 20 + 20.
  EXPECT_DOUBLE_EQ(m->layers[0].max_device_load, 60.0);
  EXPECT_DOUBLE_EQ(m->layers[0].mean_device_load, 45.0);
  EXPECT_DOUBLE_EQ(m->sum_max_device_load, 60.0);
  // Experts 2..5 live on one node only; half of their tokens come from the other node.
  EXPECT_DOUBLE_EQ(m->layers[0].cross_node_tokens, 30.0);
  EXPECT_DOUBLE_EQ(m->cross_node_share, 30.0 / 180.0);
}

TEST(RoutingTest, OriginDistributionShiftsLoad) {
  const std::vector<double> loads = {80, 40, 10, 10, 20, 20};
  EvalOptions o;
  o.origin = {1.0, 0.0, 0.0, 0.0};  // every token starts on device 0
  const auto per_device = device_loads(kLayer, loads, kTopo, o);
  EXPECT_DOUBLE_EQ(per_device[0], 90.0);  // experts 0 and 2 locally
  EXPECT_DOUBLE_EQ(per_device[1], 50.0);  // experts 1 and 3 on the same node
  EXPECT_DOUBLE_EQ(per_device[2], 20.0);
  EXPECT_DOUBLE_EQ(per_device[3], 20.0);
  auto lm = LoadMatrix::make(1, 6, loads).value();
  o.origin = {0.5, 0.5, 0.5, 0.5};
  EXPECT_FALSE(evaluate(Placement{4, 6, {kLayer}}, lm, kTopo, o).ok());
}

TEST(RoutingTest, LoadsConservedOverRandomPlacements) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    SeededRandom random(seed);
    const Topology topo{2, 8, 3};
    const LoadMatrix loads = testing::random_loads(3, 16, random);
    std::vector<Placement> plans;
    plans.push_back(eplb_plan(loads, topo, 4).value());
    plans.push_back(plan_uniform(loads, topo).value());
    for (const Placement& p : plans) {
      for (RoutingPolicy policy : {RoutingPolicy::kLocalityFirst, RoutingPolicy::kEvenSplit}) {
        for (std::size_t l = 0; l < loads.layers(); ++l) {
          const auto routing = LayerRouting::build(p.layers[l], topo, 16, policy);
          const auto per_slot = slot_loads(p.layers[l], routing, topo, loads.layer(l), {});
          // Per expert: the tokens reaching its copies add up to its load.
          std::vector<double> per_expert(16, 0.0);
          for (std::size_t s = 0; s < per_slot.size(); ++s) {
            per_expert[static_cast<std::size_t>(p.layers[l].phy2log[s])] += per_slot[s];
          }
          for (std::size_t e = 0; e < 16; ++e) {
            EXPECT_NEAR(per_expert[e], loads.at(l, e), 1e-9 * (1 + loads.at(l, e)));
          }
        }
      }
    }
  }
}

TEST(RoutingTest, SingleNodeLocalityEqualsEvenSplit) {
  const Topology topo{1, 8, 3};
  const LoadMatrix loads = testing::skewed_loads(2, 20, 7);
  const Placement p = plan_uniform(loads, topo).value();
  EvalOptions even;
  even.policy = RoutingPolicy::kEvenSplit;
  for (std::size_t l = 0; l < 2; ++l) {
    const auto a = device_loads(p.layers[l], loads.layer(l), topo);
    const auto b = device_loads(p.layers[l], loads.layer(l), topo, even);
    for (std::size_t d = 0; d < 8; ++d) EXPECT_NEAR(a[d], b[d], 1e-9 * (1 + b[d]));
    EXPECT_NEAR(*std::max_element(b.begin(), b.end()),
                even_split_max_load(p.layers[l], loads.layer(l), 8), 1e-9 * b[0] + 1e-9);
  }
}

TEST(RoutingTest, EvaluateRejectsShapeMismatch) {
  const LoadMatrix loads = testing::skewed_loads(2, 20, 7);
  const Placement p = plan_uniform(loads, Topology{1, 8, 3}).value();
  EXPECT_FALSE(evaluate(p, loads, Topology{1, 4, 3}).ok());
  EXPECT_FALSE(evaluate(p, testing::skewed_loads(3, 20, 7), Topology{1, 8, 3}).ok());
}

}  // namespace
}  // namespace omni::placement
