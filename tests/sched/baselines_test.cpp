// The baselines that used to be the cluster simulator's own (random, least-requests,
// least-tokens), now in the one registry with every other policy.
#include <gtest/gtest.h>

#include <set>

#include "omni/sched/policy.hpp"

namespace omni::sched {
namespace {

std::vector<Candidate> pool(std::vector<std::uint64_t> tokens) {
  std::vector<Candidate> out;
  for (std::uint32_t i = 0; i < tokens.size(); ++i) {
    Candidate c;
    c.instance = i;
    c.outstanding_tokens = tokens[i];
    c.outstanding_requests = 10 - i;
    out.push_back(c);
  }
  return out;
}

std::unique_ptr<PlacementPolicy> make(std::string_view name, std::uint64_t seed = 1) {
  PolicySettings settings;
  settings.seed = seed;
  auto p = make_placement_policy(name, settings);
  EXPECT_TRUE(p.ok()) << name;
  return std::move(p).value();
}

TEST(BaselinePolicies, LeastTokensAndLeastRequestsPickTheirMinimum) {
  const auto candidates = pool({500, 100, 300});
  const PlacementRequest request;
  EXPECT_EQ(make("least-tokens")->choose(request, Stage::kPrefill, candidates), 1u);
  // outstanding_requests is 10 - index: the last candidate has the fewest.
  EXPECT_EQ(make("least-requests")->choose(request, Stage::kPrefill, candidates), 2u);
  // least-load breaks a token tie by requests; least-tokens by position.
  const auto tie = pool({100, 100});
  EXPECT_EQ(make("least-load")->choose(request, Stage::kPrefill, tie), 1u);
  EXPECT_EQ(make("least-tokens")->choose(request, Stage::kPrefill, tie), 0u);
}

TEST(BaselinePolicies, RandomIsDeterministicForASeedAndCoversThePool) {
  const auto candidates = pool({0, 0, 0, 0});
  auto a = make("random", 9);
  auto b = make("random", 9);
  std::set<std::size_t> seen;
  for (int i = 0; i < 64; ++i) {
    const std::size_t x = a->choose({}, Stage::kPrefill, candidates).value();
    EXPECT_EQ(x, b->choose({}, Stage::kPrefill, candidates));
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(PolicyRegistry, OmniIsTheDefaultAndEveryNameMakesItsPolicy) {
  const auto infos = placement_policies();
  ASSERT_FALSE(infos.empty());
  EXPECT_EQ(infos.front().name, kDefaultPolicy);
  for (const auto& info : infos) {
    auto p = make_placement_policy(info.name);
    ASSERT_TRUE(p.ok()) << info.name;
    EXPECT_EQ((*p)->name(), info.name);
    EXPECT_NE(policy_names_joined().find(info.name), std::string::npos);
  }
  EXPECT_FALSE(make_placement_policy("round-robin:x=1").ok()) << "only omni takes a tuning";
  EXPECT_EQ(make_placement_policy("least").error().code, ErrorCode::kNotFound);
}

// The node speed is a visible setting, not a silent rename: equal speeds make omni judge nodes
// by queued tokens alone, learned speeds let an observed fast node win.
TEST(PolicyRegistry, NodeSpeedSettingReachesOmni) {
  PolicySettings learned;
  PolicySettings equal;
  equal.node_speed = NodeSpeed::kEqual;
  auto fast_learner = make_placement_policy("omni", learned).value();
  auto fixed = make_placement_policy("omni", equal).value();
  for (auto* p : {fast_learner.get(), fixed.get()}) {
    for (int i = 0; i < 400; ++i) {
      p->observe_prefill(0, 8000, 0.1);  // node 0: 80k tokens/s
      p->observe_prefill(1, 8000, 2.0);  // node 1: 4k tokens/s
    }
  }
  std::vector<Candidate> candidates = pool({0, 0});
  candidates[0].queued_prefill_tokens = 6000;
  candidates[1].queued_prefill_tokens = 3000;
  PlacementRequest request;
  request.prompt_tokens = 2000;
  EXPECT_EQ(fast_learner->choose(request, Stage::kPrefill, candidates), 0u);
  EXPECT_EQ(fixed->choose(request, Stage::kPrefill, candidates), 1u);
}

}  // namespace
}  // namespace omni::sched
