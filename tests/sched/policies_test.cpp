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
  c[0].outstanding_tokens = 40000;  // over 32,000
  c[1].outstanding_requests = 32;   // at the 32-request limit
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
  auto p = policy("omni:cache=0:idlecache=0:ctx=0:hold=100:learn=1");
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

// learn=2 divides smoothed tokens by smoothed busy time: a clump of completions at one instant
// (busy time 0) still counts its tokens, where learn=1 drops them and sees half the speed.
TEST(PlacementPolicies, OmniRatioLearningCountsClumpedCompletions) {
  const std::string fixed = ":cache=0:idlecache=0:ctx=0:hold=100:shrink=0";
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 30000;
  c[1].queued_prefill_tokens = 20000;
  for (const char* learn : {"1", "2"}) {
    auto p = policy("omni:learn=" + std::string(learn) + fixed);
    p->observe_prefill(0, 8000, 1.0);
    p->observe_prefill(0, 8000, 0.0);  // finished in the same step as the one before
    p->observe_prefill(1, 8000, 1.0);
    // learn=2: node 0 at ~16,400 tokens/s (1.8 s of queue) beats node 1 at 8,000 (2.5 s).
    EXPECT_EQ(p->choose(prompt(100), Stage::kPrefill, c), learn[0] == '2' ? 0u : 1u) << learn;
  }
}

// In a pool of equal engines the learned speeds differ by noise: within the band every node
// counts as the nominal speed (the choice is by queued tokens), outside it the faster one wins;
// and the hold bound stays in nominal seconds whatever speed the pool measures.
TEST(PlacementPolicies, OmniIgnoresSpeedDifferencesWithinTheBand) {
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 11000;
  c[1].queued_prefill_tokens = 10000;
  for (const char* band : {"0.25", "0.05"}) {
    // hold=2: 11,000 tokens at the nominal 8,000 tokens/s (1.4 s) are placed; at the measured
    // speeds (2.3-2.8 s) they would be held.
    auto p =
        policy(std::string("omni:learn=2:shrink=0:cache=0:idlecache=0:ctx=0:hold=2:band=") + band);
    p->observe_prefill(0, 4800, 1.0);  // 20% faster than node 1: noise in the wide band
    p->observe_prefill(1, 4000, 1.0);
    // Both measured at half the nominal speed: 11,000 queued tokens are still 1.4 s, not 2.8 s.
    EXPECT_EQ(p->choose(prompt(100), Stage::kPrefill, c), band[2] == '2' ? 1u : 0u) << band;
  }
}

TEST(PlacementPolicies, OmniChargesPartOfTheCachedContextAndOfEachQueuedRequest) {
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 1000;  // one prompt, 1000 of its 21,000 tokens uncached
  c[0].outstanding_tokens = 21000;
  c[0].outstanding_requests = 1;
  c[1].queued_prefill_tokens = 2000;  // prompts with nothing cached
  c[1].outstanding_tokens = 2000;
  c[1].outstanding_requests = 4;
  EXPECT_EQ(policy("omni:ctx=0")->choose(prompt(100), Stage::kPrefill, c), 0u);
  // 1000 + 0.1 x 20,000 cached = 3000 > 2000.
  EXPECT_EQ(policy("omni:ctx=0.1")->choose(prompt(100), Stage::kPrefill, c), 1u);
  c[1].queued_prefill_tokens = 800;
  c[1].outstanding_tokens = 800;
  EXPECT_EQ(policy("omni:ctx=0")->choose(prompt(100), Stage::kPrefill, c), 1u);
  // 1000 + 600 x 1 = 1600 < 800 + 600 x 4 = 3200.
  EXPECT_EQ(policy("omni:ctx=0:req=600")->choose(prompt(100), Stage::kPrefill, c), 0u);
  // Aggregated: outstanding tokens include running decodes and their outputs, not cached
  // prompts, so they are not charged as context: 1000 > 800.
  c[0].outstanding_tokens = 500000;
  EXPECT_EQ(policy("omni:ctx=0.1")->choose(prompt(100), Stage::kAggregated, c), 1u);
  EXPECT_TRUE(policy("omni:ctx=0.1")->choose(prompt(100), Stage::kAggregated, c).has_value());
}

// The capacity a request's uncached work takes from others is charged as much as the pool is
// busy (mean queue over the hold bound): on a light pool the cache is worth only the request's
// own time, on a busy one its weight is the full cache weight.
TEST(PlacementPolicies, OmniValuesTheCacheMoreWhenThePoolIsBusy) {
  const std::string fixed = ":cache=1:ctx=0:hold=1:seqbal=0";
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].matched_tokens = 4000;         // half of the 8000-token prompt
  c[0].queued_prefill_tokens = 5600;  // 0.7 s; node 1 idle; mean 0.35 s
  // Idle weight 0: weight 0.35. Node 0: 0.7 + (4000 + 0.35 x 4000) / 8000 = 1.375 s;
  // node 1: (8000 + 0.35 x 8000) / 8000 = 1.35 s.
  EXPECT_EQ(policy("omni:idlecache=0" + fixed)->choose(prompt(8000), Stage::kPrefill, c), 1u);
  // A constant weight of 1: node 0 1.7 s, node 1 2 s.
  EXPECT_EQ(policy("omni:idlecache=1" + fixed)->choose(prompt(8000), Stage::kPrefill, c), 0u);
  // Busy pool (mean queue 1.05 s, weight 1): node 0 1.1 + 1 = 2.1 s, node 1 1 + 2 = 3 s.
  c[0].queued_prefill_tokens = 8800;
  c[1].queued_prefill_tokens = 8000;
  EXPECT_EQ(policy("omni:idlecache=0" + fixed)->choose(prompt(8000), Stage::kPrefill, c), 0u);
}

// Sequence balancing: a long prompt avoids a node whose queue already holds a long prompt, at
// equal predicted finish; short prompts do not care.
TEST(PlacementPolicies, OmniSpreadsLongPromptsOverNodes) {
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].queued_prefill_tokens = 10000;  // one long prompt
  c[0].queued_long_prefills = 1;
  c[1].queued_prefill_tokens = 10000;  // several short ones
  const std::uint32_t long_prompt = kLongPrefillTokens + 1000;
  EXPECT_EQ(policy("omni:seqbal=0")->choose(prompt(long_prompt), Stage::kPrefill, c), 0u);
  EXPECT_EQ(policy("omni")->choose(prompt(long_prompt), Stage::kPrefill, c), 1u);
  EXPECT_EQ(policy("omni")->choose(prompt(1000), Stage::kPrefill, c), 0u);
}

TEST(PlacementPolicies, OmniOrdersTheDecodeQueueLongestFirstWithAging) {
  auto p = policy("omni");
  auto decode = [](std::uint32_t prompt_tokens, std::uint32_t output, double now, double arrival) {
    PlacementRequest r = prompt(prompt_tokens, now, arrival);
    r.max_output_tokens = output;
    r.stage = Stage::kDecode;
    return r;
  };
  // Longest processing time first: prompt + expected output.
  EXPECT_LT(p->queue_score(decode(4000, 500, 0, 0)), p->queue_score(decode(1000, 500, 0, 0)));
  EXPECT_LT(p->queue_score(decode(1000, 3000, 0, 0)), p->queue_score(decode(3000, 100, 0, 0)));
  // A short one that has waited 2 s (8192 tokens of aging) overtakes a fresh long one.
  EXPECT_LT(p->queue_score(decode(500, 100, 2, 0)), p->queue_score(decode(8000, 100, 2, 2)));
  // alpha = 0: only the prompt counts.
  auto prompt_only = policy("omni:dalpha=0");
  EXPECT_LT(prompt_only->queue_score(decode(3000, 100, 0, 0)),
            prompt_only->queue_score(decode(1000, 3000, 0, 0)));
  // The prefill queue keeps shortest first.
  EXPECT_LT(p->queue_score(prompt(1000)), p->queue_score(prompt(4000)));
}

TEST(PlacementPolicies, OmniHoldsDecodeOnlyWhenAllowedAndEveryNodeIsOver) {
  auto p = policy("omni");
  std::vector<Candidate> c = {node(0), node(1)};
  c[0].kv_usage = 0.95;  // over the 0.92 KV limit
  c[1].waiting = 3;      // its engine could not admit everything
  c[0].outstanding_tokens = 1000;
  c[1].outstanding_tokens = 1000;
  PlacementRequest r = prompt(1000);
  r.stage = Stage::kDecode;
  EXPECT_TRUE(p->choose(r, Stage::kDecode, c).has_value());  // the caller cannot hold
  r.decode_may_wait = true;
  EXPECT_FALSE(p->choose(r, Stage::kDecode, c).has_value());
  c[1].waiting = 0;
  EXPECT_EQ(p->choose(r, Stage::kDecode, c), 1u);
}

TEST(PlacementPolicies, OmniDecodeWeighsKvTransferAgainstLoad) {
  auto p = policy("omni");
  std::vector<Candidate> c = {node(0), node(1)};
  PlacementRequest r = prompt(1000);
  r.stage = Stage::kDecode;
  c[0].kv_transfer_seconds = 0.05;  // worth 5000 outstanding tokens
  c[1].outstanding_tokens = 3000;
  EXPECT_EQ(p->choose(r, Stage::kDecode, c), 1u);
  c[1].outstanding_tokens = 7000;
  EXPECT_EQ(p->choose(r, Stage::kDecode, c), 0u);
}

TEST(PlacementPolicies, OmniTuningIsValidated) {
  EXPECT_TRUE(make_placement_policy("omni:cache=2:hold=3:aging=100").ok());
  EXPECT_TRUE(
      make_placement_policy("omni:learn=2:shrink=50:ctx=0.2:req=64:idlecache=0.3:seqbal=0.5:"
                            "dkv=0.9:dalpha=0.5:daging=100")
          .ok());
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
