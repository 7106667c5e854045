#include <gtest/gtest.h>

#include "omni/sched/policy.hpp"

namespace omni::sched {
namespace {

std::unique_ptr<PlacementPolicy> policy(std::string_view name) {
  auto p = make_placement_policy(name);
  EXPECT_TRUE(p.ok()) << name;
  return std::move(p).value();
}

Candidate node(InstanceId id) {
  Candidate c;
  c.instance = id;
  return c;
}

PlacementRequest prompt(std::uint32_t tokens, double now = 0, double arrival = 0) {
  PlacementRequest r;
  r.prompt_tokens = tokens;
  r.now = now;
  r.arrival = arrival;
  r.block_size = 16;
  return r;
}

TEST(PlacementPolicies, RegistryKnowsEveryNameAndRejectsOthers) {
  for (const auto& info : placement_policies()) {
    auto p = make_placement_policy(info.name);
    ASSERT_TRUE(p.ok()) << info.name;
    EXPECT_EQ((*p)->name(), info.name);
    EXPECT_FALSE(info.summary.empty());
  }
  auto bad = make_placement_policy("sglang");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sglang-cache-aware"), std::string::npos);
}

TEST(PlacementPolicies, RoundRobinCyclesPerStage) {
  auto p = policy("round-robin");
  const std::vector<Candidate> c = {node(0), node(1), node(2)};
  EXPECT_EQ(p->choose(prompt(10), Stage::kPrefill, c), 0u);
  EXPECT_EQ(p->choose(prompt(10), Stage::kPrefill, c), 1u);
  EXPECT_EQ(p->choose(prompt(10), Stage::kDecode, c), 0u);
  EXPECT_EQ(p->choose(prompt(10), Stage::kPrefill, c), 2u);
}

TEST(PlacementPolicies, LeastLoadTakesFewestOutstandingTokensThenRequests) {
  auto p = policy("least-load");
  std::vector<Candidate> c = {node(0), node(1), node(2)};
  c[0].outstanding_tokens = 500;
  c[1].outstanding_tokens = 100;
  c[1].outstanding_requests = 3;
  c[2].outstanding_tokens = 100;
  c[2].outstanding_requests = 1;
  EXPECT_EQ(p->choose(prompt(10), Stage::kPrefill, c), 2u);
}

TEST(PlacementPolicies, SglangCacheAwareFollowsItsThresholds) {
  auto p = policy("sglang-cache-aware");
  std::vector<Candidate> c = {node(0), node(1), node(2)};
  c[0].matched_tokens = 400;  // 40% of the prompt: above the 0.3 threshold
  c[1].kv_usage = 0.1;
  c[2].kv_usage = 0.5;
  c[0].kv_usage = 0.9;
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 0u);
  c[0].matched_tokens = 200;  // 20%: below, so the smallest cache (lowest usage) wins
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 1u);
  // Imbalanced (max - min > 64 and max > 1.5 x min): the least loaded, whatever the cache says.
  c[0].matched_tokens = 900;
  c[0].outstanding_requests = 100;
  c[1].outstanding_requests = 90;
  c[2].outstanding_requests = 20;
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 2u);
  // 80 vs 20 is not imbalanced enough in absolute terms (difference 60 <= 64).
  c[0].outstanding_requests = 80;
  c[1].outstanding_requests = 80;
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 0u);
}

TEST(PlacementPolicies, LlmDWeighsQueueKvAndPrefixTwoTwoThree) {
  auto p = policy("llm-d");
  std::vector<Candidate> c = {node(0), node(1)};
  // Node 0: half the prompt cached (prefix 0.5 x 3 = 1.5) but the longest queue (0) and 50% KV (1).
  // Node 1: nothing cached, empty queue (2) and empty cache (2): 4 > 2.5.
  c[0].matched_tokens = 500;
  c[0].waiting = 10;
  c[0].kv_usage = 0.5;
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 1u);
  c[0].matched_tokens = 1000;  // 3 + 0 + 1 = 4 ties 4: the first wins
  c[0].kv_usage = 0.4;         // 3 + 0 + 1.2 = 4.2 > 4
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 0u);
}

TEST(PlacementPolicies, DynamoAddsPrefillBlocksAfterOverlapAndActiveBlocks) {
  auto p = policy("dynamo");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].matched_tokens = 800;       // 200 tokens left: 13 blocks of 16
  c[0].outstanding_tokens = 1600;  // 100 active blocks -> 113
  c[1].outstanding_tokens = 1000;  // 1000 tokens to prefill: 63 blocks, + 63 active -> 126
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 0u);
  c[0].outstanding_tokens = 1900;  // 119 + 13 = 132 > 126
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 1u);
}

TEST(PlacementPolicies, OmniAnchorHoldsWhenEveryNodeIsOverItsLimits) {
  auto p = policy("omni-anchor");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].outstanding_tokens = 40000;   // over 32,000
  c[1].outstanding_requests = 32;    // at the 32-request limit
  EXPECT_FALSE(p->choose(prompt(100), Stage::kPrefill, c).has_value());
  EXPECT_TRUE(p->choose(prompt(100), Stage::kDecode, c).has_value());  // decode never holds
  c[1].outstanding_requests = 5;
  c[1].matched_tokens = 0;
  EXPECT_EQ(p->choose(prompt(100), Stage::kPrefill, c), 1u);
  // Shorter prompts first, and waiting makes a long one catch up.
  EXPECT_LT(p->queue_score(prompt(1000, 10, 10)), p->queue_score(prompt(20000, 10, 10)));
  EXPECT_LT(p->queue_score(prompt(20000, 100, 0)), p->queue_score(prompt(1000, 100, 100)));
}

TEST(PlacementPolicies, OmniPicksTheEarliestPredictedFinish) {
  auto p = policy("omni");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 4000;  // 0.5 s of queue at 8000 tokens/s
  c[0].matched_tokens = 7000;         // but only 1000 tokens left to compute
  c[1].queued_prefill_tokens = 0;     // 8000 tokens to compute: 2 s with the cache weight
  EXPECT_EQ(p->choose(prompt(8000), Stage::kPrefill, c), 0u);
  c[0].matched_tokens = 0;
  EXPECT_EQ(p->choose(prompt(8000), Stage::kPrefill, c), 1u);
}

TEST(PlacementPolicies, OmniHoldsOnlyWhenEveryQueueIsFull) {
  auto p = policy("omni:hold=1");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 9000;  // > 1 s at the initial 8000 tokens/s
  c[1].queued_prefill_tokens = 9000;
  EXPECT_FALSE(p->choose(prompt(100), Stage::kPrefill, c).has_value());
  c[1].queued_prefill_tokens = 1000;
  EXPECT_EQ(p->choose(prompt(100), Stage::kPrefill, c), 1u);
  // Aging: a long prompt that has waited overtakes a fresh short one.
  EXPECT_LT(p->queue_score(prompt(500, 0, 0)), p->queue_score(prompt(4000, 0, 0)));
  EXPECT_LT(p->queue_score(prompt(4000, 2, 0)), p->queue_score(prompt(500, 2, 2)));
}

TEST(PlacementPolicies, OmniLearnsNodeSpeedsFromObservedPrefills) {
  auto p = policy("omni:cache=0");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 20000;
  c[1].queued_prefill_tokens = 10000;
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 1u);
  for (int i = 0; i < 200; ++i) {
    p->observe_prefill(0, 100000, 1.0);  // node 0 is 20x faster than node 1
    p->observe_prefill(1, 5000, 1.0);
  }
  EXPECT_EQ(p->choose(prompt(1000), Stage::kPrefill, c), 0u);
}

TEST(PlacementPolicies, OmniTuningIsValidated) {
  EXPECT_TRUE(make_placement_policy("omni:cache=2:hold=3:aging=100").ok());
  EXPECT_FALSE(make_placement_policy("omni:cache").ok());
  EXPECT_FALSE(make_placement_policy("omni:speed=2").ok());
  EXPECT_FALSE(make_placement_policy("omni:cache=-1").ok());
  EXPECT_FALSE(make_placement_policy("omni:cache=abc").ok());
}

TEST(PlacementPolicies, OmniSteersDecodeAwayFromFullCaches) {
  auto p = policy("omni");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].outstanding_tokens = 1000;
  c[0].kv_usage = 0.99;
  c[1].outstanding_tokens = 2000;
  c[1].kv_usage = 0.3;
  EXPECT_EQ(p->choose(prompt(100), Stage::kDecode, c), 1u);
}

}  // namespace
}  // namespace omni::sched
