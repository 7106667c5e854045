#include "omni/placement/balanced.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "omni/placement/eplb.hpp"
#include "omni/placement/routing.hpp"
#include "test_util.hpp"

namespace omni::placement {
namespace {

double sum_even_max(const Placement& p, const LoadMatrix& loads) {
  double sum = 0.0;
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    sum += even_split_max_load(p.layers[l], loads.layer(l), p.devices);
  }
  return sum;
}

TEST(BalancedTest, PropertiesOverRandomInputs) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    SeededRandom random(seed);
    const auto devices = static_cast<std::size_t>(random.uniform_int(1, 12));
    const auto experts = static_cast<std::size_t>(random.uniform_int(1, 40));
    const std::size_t min_slots = (experts + devices - 1) / devices;
    const auto slots = static_cast<std::size_t>(
        random.uniform_int(static_cast<std::int64_t>(min_slots),
                           static_cast<std::int64_t>(std::min(experts, min_slots + 3))));
    const LoadMatrix loads = seed % 2 == 0 ? testing::random_loads(2, experts, random)
                                           : testing::skewed_loads(2, experts, seed, 1.2);
    auto plan = plan_uniform(loads, Topology{1, devices, slots});
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    ASSERT_TRUE(plan->validate().ok())
        << "seed " << seed << ": " << plan->validate().error().to_string();
    for (std::size_t l = 0; l < 2; ++l) {
      EXPECT_EQ(plan->layers[l].slots_per_device, slots);
      EXPECT_EQ(plan->layers[l].phy2log.size(), devices * slots);
      const auto copies = plan->copies(l);
      EXPECT_EQ(std::accumulate(copies.begin(), copies.end(), std::size_t{0}), devices * slots);
      for (std::size_t c : copies) EXPECT_LE(c, devices);
    }
  }
}

// With several nodes an expert's copies sit equally many on each node holding one, which keeps
// locality-first routing as balanced as the even-split model the planner optimises.
TEST(BalancedTest, CopiesSpreadEvenlyOverNodes) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SeededRandom random(seed);
    const auto nodes = static_cast<std::size_t>(random.uniform_int(2, 4));
    const std::size_t devices = nodes * static_cast<std::size_t>(random.uniform_int(1, 4));
    const auto experts = static_cast<std::size_t>(random.uniform_int(4, 40));
    const std::size_t slots =
        std::min(experts, (experts + devices - 1) / devices +
                              static_cast<std::size_t>(random.uniform_int(0, 3)));
    const Topology topo{nodes, devices, slots};
    const LoadMatrix loads = testing::skewed_loads(2, experts, seed, 1.3);
    const Placement p = plan_uniform(loads, topo).value();
    ASSERT_TRUE(p.validate().ok()) << seed;
    for (std::size_t l = 0; l < 2; ++l) {
      std::vector<std::size_t> per_node(nodes * experts, 0);
      for (std::size_t s = 0; s < p.layers[l].phy2log.size(); ++s) {
        const auto e = static_cast<std::size_t>(p.layers[l].phy2log[s]);
        ++per_node[topo.node_of(p.layers[l].device_of_slot(s)) * experts + e];
      }
      for (std::size_t e = 0; e < experts; ++e) {
        std::size_t low = devices;
        std::size_t high = 0;
        for (std::size_t n = 0; n < nodes; ++n) {
          const std::size_t c = per_node[n * experts + e];
          if (c == 0) continue;
          low = std::min(low, c);
          high = std::max(high, c);
        }
        EXPECT_EQ(low, high) << "seed " << seed << " layer " << l << " expert " << e;
      }
    }
  }
}

TEST(BalancedTest, PerfectSplitWhenPossible) {
  // Two devices, two slots: {60, 40, 30, 70} packs into 100 + 100.
  const std::vector<double> loads = {60, 40, 30, 70};
  auto layer = plan_layer_balanced(loads, 2, 2);
  ASSERT_TRUE(layer.ok());
  EXPECT_DOUBLE_EQ(even_split_max_load(*layer, loads, 2), 100.0);
}

TEST(BalancedTest, HotExpertGetsCopiesOnDistinctDevices) {
  const std::vector<double> loads = {1000, 10, 10, 10};
  auto layer = plan_layer_balanced(loads, 4, 2);
  ASSERT_TRUE(layer.ok());
  Placement p{4, 4, {*layer}};
  EXPECT_TRUE(p.validate().ok());
  EXPECT_EQ(p.copies(0)[0], 4u);  // capped at one copy per device
}

TEST(BalancedTest, RejectsImpossibleShapes) {
  const std::vector<double> loads = {1, 2, 3, 4, 5};
  EXPECT_FALSE(plan_layer_balanced(loads, 2, 2).ok());  // 4 slots < 5 experts
  EXPECT_FALSE(plan_layer_balanced(loads, 2, 6).ok());  // more slots than experts
  EXPECT_FALSE(plan_layer_balanced(loads, 0, 3).ok());
  EXPECT_FALSE(plan_uniform(LoadMatrix::make(1, 5, {1, 2, 3, 4, 5}).value(), Topology{3, 4, 2})
                   .ok());  // devices not a multiple of nodes
}

TEST(BalancedTest, NeverWorseThanEplbOnSkewedLoads) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const LoadMatrix loads = testing::skewed_loads(8, 64, seed, 1.0);
    const Topology topo{1, 16, 5};
    const Placement ours = plan_uniform(loads, topo).value();
    const Placement eplb = eplb_plan(loads, topo, 1).value();
    EXPECT_LE(sum_even_max(ours, loads), sum_even_max(eplb, loads) * (1 + 1e-9)) << seed;
  }
}

TEST(LayerwiseTest, RespectsBudgetAndBounds) {
  const LoadMatrix loads = testing::skewed_loads(10, 32, 3, 1.2);
  const Topology topo{1, 8, 5};  // uniform memory: 10 layers x 5 slots
  auto plan = plan_layerwise(loads, topo);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  ASSERT_TRUE(plan->placement.validate().ok());
  std::size_t used = 0;
  for (std::size_t l = 0; l < 10; ++l) {
    const std::size_t s = plan->slots_per_device[l];
    EXPECT_GE(s, 4u);  // ceil(32 / 8)
    EXPECT_EQ(plan->placement.layers[l].slots_per_device, s);
    used += s;
  }
  EXPECT_EQ(used + plan->unused_slots, 50u);

  LayerwiseOptions capped;
  capped.max_slots_per_device = 5;
  capped.total_slots_per_device = 70;
  auto capped_plan = plan_layerwise(loads, topo, capped);
  ASSERT_TRUE(capped_plan.ok());
  for (std::size_t s : capped_plan->slots_per_device) EXPECT_LE(s, 5u);
}

TEST(LayerwiseTest, PropertiesOverRandomInputs) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    SeededRandom random(seed);
    const auto devices = static_cast<std::size_t>(random.uniform_int(2, 8));
    const auto experts = static_cast<std::size_t>(random.uniform_int(devices, 32));
    const std::size_t base = (experts + devices - 1) / devices;
    const std::size_t layers = 6;
    const LoadMatrix loads = testing::skewed_loads(layers, experts, seed, 1.2);
    LayerwiseOptions o;
    o.total_slots_per_device =
        layers * base + static_cast<std::size_t>(random.uniform_int(0, 2 * layers));
    auto plan = plan_layerwise(loads, Topology{1, devices, base}, o);
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    ASSERT_TRUE(plan->placement.validate().ok()) << seed;
    std::size_t used = 0;
    for (std::size_t l = 0; l < layers; ++l) {
      EXPECT_GE(plan->slots_per_device[l], base);
      EXPECT_EQ(plan->placement.layers[l].phy2log.size(), devices * plan->slots_per_device[l]);
      used += plan->slots_per_device[l];
    }
    EXPECT_EQ(used + plan->unused_slots, o.total_slots_per_device) << seed;
  }
}

TEST(LayerwiseTest, RejectsImpossibleBudget) {
  const LoadMatrix loads = testing::skewed_loads(4, 32, 3);
  LayerwiseOptions o;
  o.total_slots_per_device = 15;  // 4 layers need 4 slots each
  EXPECT_FALSE(plan_layerwise(loads, Topology{1, 8, 4}, o).ok());
  o.total_slots_per_device = 16;
  o.min_slots_per_device = 3;  // 24 slots < 32 experts
  EXPECT_FALSE(plan_layerwise(loads, Topology{1, 8, 4}, o).ok());
}

TEST(LayerwiseTest, GivesMoreSlotsToSkewedLayers) {
  // Layer 0 is flat, layer 1 has one very hot expert: the spare slot goes to layer 1, where it
  // lowers the max from 3100 to 575; a second one helps neither layer (flat 200 stays 200; the
  // hot layer cannot split its 1500 cold tokens into equal 187.5 shares), so it is left unused.
  std::vector<double> v(2 * 16, 100.0);
  v[16] = 3000.0;
  const LoadMatrix loads = LoadMatrix::make(2, 16, std::move(v)).value();
  LayerwiseOptions o;
  o.total_slots_per_device = 2 + 2 + 2;  // two slots each at least, two to spare
  auto plan = plan_layerwise(loads, Topology{1, 8, 3}, o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->slots_per_device, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(plan->unused_slots, 1u);
  EXPECT_DOUBLE_EQ(even_split_max_load(plan->placement.layers[1], loads.layer(1), 8), 575.0);
}

// At equal memory: layer-wise <= uniform <= (or about) EPLB, on the step-time objective.
TEST(LayerwiseTest, QualityOrderingAtEqualMemory) {
  for (std::uint64_t seed = 11; seed <= 14; ++seed) {
    SeededRandom random(seed);
    SyntheticOptions so;
    so.layers = 16;
    so.experts = 64;
    so.zipf_s = 1.0;
    so.zipf_s_spread = 1.0;  // some layers far more skewed than others
    so.layer_correlation = 0.3;
    const LoadMatrix loads = synthetic_loads(so, random);
    const Topology topo{2, 16, 6};  // two redundant slots per device and layer
    const Placement eplb = eplb_plan(loads, topo, 8).value();
    const Placement uniform = plan_uniform(loads, topo).value();
    const Placement layerwise = plan_layerwise(loads, topo).value().placement;
    EvalOptions even;
    even.policy = RoutingPolicy::kEvenSplit;
    const double e = evaluate(eplb, loads, topo, even)->sum_max_device_load;
    const double u = evaluate(uniform, loads, topo, even)->sum_max_device_load;
    const double w = evaluate(layerwise, loads, topo, even)->sum_max_device_load;
    EXPECT_LT(w, u) << seed;
    EXPECT_LE(u, e * (1 + 1e-9)) << seed;
    EXPECT_LT(w, 0.95 * e) << seed;
    // The locality-first routing tables see the same balance: copies are spread evenly on nodes.
    const double w_local = evaluate(layerwise, loads, topo)->sum_max_device_load;
    EXPECT_NEAR(w_local, w, 1e-9 * w) << seed;
  }
}

}  // namespace
}  // namespace omni::placement
