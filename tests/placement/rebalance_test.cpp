#include "omni/placement/rebalance.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "omni/placement/balanced.hpp"
#include "omni/placement/eplb.hpp"
#include "omni/placement/routing.hpp"
#include "test_util.hpp"

namespace omni::placement {
namespace {

double layer_max(const Placement& p, const LoadMatrix& loads, std::size_t l) {
  return even_split_max_load(p.layers[l], loads.layer(l), p.devices);
}

// Replays the moves one by one, checking each against the state it finds.
void expect_monotone(Placement p, const LoadMatrix& loads, const RebalancePlan& plan) {
  for (const Move& m : plan.moves) {
    const double before = layer_max(p, loads, m.layer);
    EXPECT_NEAR(before, m.max_load_before, 1e-9 * before);
    apply_moves(p, {m});
    const double after = layer_max(p, loads, m.layer);
    EXPECT_NEAR(after, m.max_load_after, 1e-9 * before);
    EXPECT_LT(after, before) << "move in layer " << m.layer << " did not improve";
    ASSERT_TRUE(p.validate().ok()) << p.validate().error().to_string();
  }
}

void expect_rounds_disjoint(const Placement& p, const RebalancePlan& plan) {
  std::set<std::size_t> busy;
  std::size_t round = 0;
  for (const Move& m : plan.moves) {
    ASSERT_GE(m.round, round) << "rounds must not decrease";
    if (m.round != round) {
      busy.clear();
      round = m.round;
    }
    const std::size_t per = p.layers[m.layer].slots_per_device;
    const std::size_t da = m.slot_a / per;
    const std::size_t db = m.slot_b / per;
    EXPECT_NE(da, db);
    EXPECT_TRUE(busy.insert(da).second) << "device " << da << " twice in round " << round;
    EXPECT_TRUE(busy.insert(db).second) << "device " << db << " twice in round " << round;
  }
  if (!plan.moves.empty()) {
    EXPECT_EQ(plan.rounds, plan.moves.back().round + 1);
  }
}

TEST(RebalanceTest, MovesImproveRespectBudgetAndRounds) {
  for (std::uint64_t seed = 1; seed <= 25; ++seed) {
    const Topology topo{2, 8, 3};
    // Planned for yesterday's loads, measured on today's.
    const LoadMatrix old_loads = testing::skewed_loads(4, 20, seed, 1.2);
    const LoadMatrix new_loads = testing::skewed_loads(4, 20, seed + 1000, 1.2);
    const Placement current = plan_uniform(old_loads, topo).value();
    RebalanceOptions o;
    o.max_moves = 1 + seed % 12;
    o.target_ratio = 1.0;
    auto plan = rebalance(current, new_loads, topo, o);
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    EXPECT_LE(plan->moves.size(), o.max_moves);
    EXPECT_FALSE(plan->moves.empty()) << seed;
    std::size_t weights = 0;
    for (const Move& m : plan->moves) weights += m.weights_moved();
    EXPECT_EQ(weights, plan->weights_moved);
    expect_monotone(current, new_loads, *plan);
    expect_rounds_disjoint(current, *plan);
  }
}

TEST(RebalanceTest, StopsAtTargetRatio) {
  const Topology topo{1, 8, 3};
  const LoadMatrix loads = testing::skewed_loads(3, 20, 5, 1.2);
  const Placement fresh = plan_uniform(loads, topo).value();
  RebalanceOptions loose;
  loose.target_ratio = 100.0;  // already met: nothing to do
  auto none = rebalance(fresh, loads, topo, loose);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->moves.empty());
  EXPECT_EQ(none->rounds, 0u);
}

TEST(RebalanceTest, RecoversFromABadPlacement) {
  // Round-robin placement ignores the loads; rebalancing must bring the max down a lot.
  const Topology topo{1, 4, 3};
  const LoadMatrix loads = LoadMatrix::make(1, 8, {800, 400, 50, 50, 50, 50, 50, 50}).value();
  Placement p{4, 8, {LayerPlacement{3, {0, 1, 2, 3, 4, 5, 6, 7, 2, 3, 4, 5}}}};
  ASSERT_TRUE(p.validate().ok());
  const double before = layer_max(p, loads, 0);  // 800 + 400 + 25
  RebalanceOptions o;
  o.max_moves = 20;
  o.target_ratio = 1.05;
  auto plan = rebalance(p, loads, topo, o);
  ASSERT_TRUE(plan.ok());
  expect_monotone(p, loads, *plan);
  apply_moves(p, plan->moves);
  const double after = layer_max(p, loads, 0);
  EXPECT_LT(after, 0.6 * before);
  // A replace must have happened: the hot expert needs more copies than the round robin gave.
  EXPECT_GT(p.copies(0)[0], 1u);
}

TEST(RebalanceTest, AcceptsEplbPlacementsWithColocatedCopies) {
  const Topology topo{1, 4, 4};
  const LoadMatrix loads = testing::skewed_loads(2, 12, 9, 1.5);
  const Placement eplb = eplb_plan(loads, topo, 1).value();
  auto plan = rebalance(eplb, testing::skewed_loads(2, 12, 10, 1.5), topo);
  ASSERT_TRUE(plan.ok());
  Placement after = eplb;
  apply_moves(after, plan->moves);
  EXPECT_TRUE(after.validate(true).ok());
}

TEST(RebalanceTest, RejectsShapeMismatch) {
  const Topology topo{1, 8, 3};
  const LoadMatrix loads = testing::skewed_loads(3, 20, 5);
  const Placement p = plan_uniform(loads, topo).value();
  EXPECT_FALSE(rebalance(p, testing::skewed_loads(2, 20, 5), topo).ok());
  EXPECT_FALSE(rebalance(p, loads, Topology{1, 4, 3}).ok());
}

TEST(LoadSmootherTest, ExponentialMovingAverage) {
  LoadSmoother s(0.25);
  EXPECT_FALSE(s.has_value());
  ASSERT_TRUE(s.update(LoadMatrix::make(1, 2, {100, 0}).value()).ok());
  EXPECT_DOUBLE_EQ(s.smoothed().at(0, 0), 100.0);
  ASSERT_TRUE(s.update(LoadMatrix::make(1, 2, {0, 100}).value()).ok());
  EXPECT_DOUBLE_EQ(s.smoothed().at(0, 0), 75.0);
  EXPECT_DOUBLE_EQ(s.smoothed().at(0, 1), 25.0);
  EXPECT_FALSE(s.update(LoadMatrix::make(2, 1, {1, 2}).value()).ok());
}

}  // namespace
}  // namespace omni::placement
