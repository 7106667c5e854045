#include "omni/placement/simulator.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "omni/placement/synthetic.hpp"

namespace omni::placement {
namespace {

std::vector<LoadMatrix> drifting_windows(std::size_t count) {
  SeededRandom random(2024);
  SyntheticOptions o;
  o.layers = 6;
  o.experts = 32;
  o.zipf_s = 1.1;
  o.drift = 0.5;
  o.tokens_per_layer = 10000.0;
  return synthetic_windows(o, count, random);
}

SimOptions options() {
  SimOptions o;
  o.topology = Topology{2, 8, 5};
  o.num_groups = 4;
  o.replan_period = 3;
  o.ema_alpha = 0.7;
  o.rebalance.max_moves = 24;
  o.rebalance.target_ratio = 1.02;
  return o;
}

TEST(SimulatorTest, StaticAlgorithmsNeverMoveWeights) {
  const auto windows = drifting_windows(6);
  for (SimAlgorithm a : {SimAlgorithm::kStaticEplb, SimAlgorithm::kStaticLayerwise}) {
    auto report = simulate(windows, a, options());
    ASSERT_TRUE(report.ok()) << report.error().to_string();
    ASSERT_EQ(report->windows.size(), 6u);
    EXPECT_EQ(report->total_weights_moved, 0u);
    for (std::size_t w = 0; w < 6; ++w) {
      EXPECT_EQ(report->windows[w].window, w);
      EXPECT_GE(report->windows[w].mean_imbalance, 1.0);
    }
  }
}

TEST(SimulatorTest, PeriodicEplbMovesOnlyAtReplans) {
  const auto windows = drifting_windows(7);
  auto report = simulate(windows, SimAlgorithm::kPeriodicEplb, options());
  ASSERT_TRUE(report.ok());
  for (std::size_t w = 0; w < 7; ++w) {
    if ((w + 1) % 3 != 0) {
      EXPECT_EQ(report->windows[w].weights_moved, 0u) << w;
    }
  }
  EXPECT_GT(report->windows[2].weights_moved, 0u);
  EXPECT_EQ(report->windows[6].weights_moved, 0u);  // the last window triggers nothing
}

TEST(SimulatorTest, DynamicRebalancingBeatsStaticUnderDrift) {
  const auto windows = drifting_windows(10);
  auto dynamic = simulate(windows, SimAlgorithm::kDynamicRebalance, options());
  auto fixed = simulate(windows, SimAlgorithm::kStaticEplb, options());
  ASSERT_TRUE(dynamic.ok());
  ASSERT_TRUE(fixed.ok());
  EXPECT_GT(dynamic->total_weights_moved, 0u);
  EXPECT_LT(dynamic->mean_imbalance, fixed->mean_imbalance);
  // Bounded by the per-window budget: at most two weights per move.
  for (const WindowReport& w : dynamic->windows) EXPECT_LE(w.weights_moved, 48u);
}

TEST(SimulatorTest, DeterministicAndValidated) {
  const auto windows = drifting_windows(4);
  auto a = simulate(windows, SimAlgorithm::kDynamicRebalance, options());
  auto b = simulate(windows, SimAlgorithm::kDynamicRebalance, options());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  for (std::size_t w = 0; w < 4; ++w) {
    EXPECT_EQ(a->windows[w].sum_max_device_load, b->windows[w].sum_max_device_load);
    EXPECT_EQ(a->windows[w].weights_moved, b->windows[w].weights_moved);
  }
  EXPECT_FALSE(simulate({}, SimAlgorithm::kStaticEplb, options()).ok());
  SimOptions bad = options();
  bad.topology.slots_per_device = 1;  // 8 slots for 32 experts
  EXPECT_FALSE(simulate(windows, SimAlgorithm::kStaticEplb, bad).ok());
}

TEST(SimulatorTest, AlgorithmNamesRoundTrip) {
  for (SimAlgorithm a : {SimAlgorithm::kStaticEplb, SimAlgorithm::kStaticLayerwise,
                         SimAlgorithm::kPeriodicEplb, SimAlgorithm::kDynamicRebalance}) {
    auto parsed = parse_sim_algorithm(sim_algorithm_name(a));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, a);
  }
  EXPECT_FALSE(parse_sim_algorithm("greedy").ok());
}

}  // namespace
}  // namespace omni::placement
