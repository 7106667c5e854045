#include <gtest/gtest.h>

#include <set>

#include "omni/cluster/policy.hpp"

namespace omni::cluster {
namespace {

class FakeView final : public ClusterView {
 public:
  std::vector<InstanceLoad> prefill_pool, decode_pool;
  std::span<const InstanceLoad> prefill() const override { return prefill_pool; }
  std::span<const InstanceLoad> decode() const override { return decode_pool; }
  std::uint32_t cached_prefix_tokens(Role, std::uint32_t,
                                     std::span<const std::uint64_t>) const override {
    return 0;
  }
  std::uint32_t block_size() const override { return 16; }
};

std::vector<InstanceLoad> pool(Role role, std::vector<std::uint64_t> tokens,
                               std::vector<std::uint32_t> groups = {}) {
  std::vector<InstanceLoad> loads;
  for (std::uint32_t i = 0; i < tokens.size(); ++i) {
    InstanceLoad load;
    load.index = i;
    load.role = role;
    load.outstanding_tokens = tokens[i];
    load.outstanding_requests = static_cast<std::uint32_t>(10 - i);
    load.group = groups.empty() ? 0 : groups[i];
    loads.push_back(load);
  }
  return loads;
}

TEST(Policies, UnknownNameListsTheKnownOnes) {
  auto policy = make_policy("nope", 1);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.error().message.find("least-tokens"), std::string::npos);
  for (const auto& name : policy_names()) EXPECT_TRUE(make_policy(name, 1).ok()) << name;
}

TEST(Policies, RoundRobinVisitsEveryInstanceInTurn) {
  FakeView view;
  view.prefill_pool = pool(Role::kPrefill, {0, 0, 0});
  view.decode_pool = pool(Role::kDecode, {0, 0});
  auto policy = make_policy("round-robin", 1).value();
  std::vector<std::uint32_t> prefills, decodes;
  for (int i = 0; i < 6; ++i) {
    prefills.push_back(policy->choose_prefill({}, view).value());
    decodes.push_back(policy->choose_decode({}, nullptr, view).value());
  }
  EXPECT_EQ(prefills, (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(decodes, (std::vector<std::uint32_t>{0, 1, 0, 1, 0, 1}));
}

TEST(Policies, LeastTokensAndLeastRequestsPickTheirMinimum) {
  FakeView view;
  view.prefill_pool = pool(Role::kPrefill, {500, 100, 300});
  view.decode_pool = pool(Role::kDecode, {9, 7, 8});
  auto tokens = make_policy("least-tokens", 1).value();
  EXPECT_EQ(tokens->choose_prefill({}, view), 1u);
  EXPECT_EQ(tokens->choose_decode({}, nullptr, view), 1u);
  auto requests = make_policy("least-requests", 1).value();
  // outstanding_requests is 10 - index: the last instance has the fewest.
  EXPECT_EQ(requests->choose_prefill({}, view), 2u);
}

TEST(Policies, DecodeChoicesStayInThePrefillGroup) {
  FakeView view;
  view.prefill_pool = pool(Role::kPrefill, {0, 0}, {0, 1});
  view.decode_pool = pool(Role::kDecode, {1, 2, 50, 60}, {0, 0, 1, 1});
  for (const auto& name : policy_names()) {
    auto policy = make_policy(name, 3).value();
    for (int i = 0; i < 8; ++i) {
      const std::uint32_t d = policy->choose_decode({}, &view.prefill_pool[1], view).value();
      EXPECT_EQ(view.decode_pool[d].group, 1u) << name;
    }
  }
}

// The omni policy behind the adapter: a prefilled request (awaiting_decode) may be held when
// every decode node of its group is over its thresholds, a first placement may not; the held
// queue is ordered longest first.
TEST(Policies, SchedAdapterLetsOmniHoldOnlyPrefilledRequestsForDecode) {
  FakeView view;
  view.prefill_pool = pool(Role::kPrefill, {0, 0});
  view.decode_pool = pool(Role::kDecode, {100, 100});
  for (auto& load : view.decode_pool) load.kv_usage = 0.97;
  auto policy = make_policy("omni", 1).value();
  RoutingRequest request;
  request.prompt_tokens = 1000;
  request.max_output_tokens = 100;
  EXPECT_TRUE(policy->choose_decode(request, &view.prefill_pool[0], view).has_value());
  request.awaiting_decode = true;
  EXPECT_FALSE(policy->choose_decode(request, &view.prefill_pool[0], view).has_value());
  view.decode_pool[1].kv_usage = 0.5;
  EXPECT_EQ(policy->choose_decode(request, &view.prefill_pool[0], view), 1u);
  RoutingRequest shorter = request;
  shorter.prompt_tokens = 200;
  EXPECT_LT(policy->queue_score(request), policy->queue_score(shorter));
  request.awaiting_decode = false;  // the prefill queue: shortest first
  shorter.awaiting_decode = false;
  EXPECT_GT(policy->queue_score(request), policy->queue_score(shorter));
}

TEST(Policies, SchedAdapterPassesQueuedLongPromptsToOmni) {
  FakeView view;
  view.prefill_pool = pool(Role::kPrefill, {0, 0});
  view.decode_pool = pool(Role::kDecode, {0});
  for (auto& load : view.prefill_pool) load.queued_prefill_tokens = 12000;
  view.prefill_pool[0].queued_long_prefills = 1;
  auto policy = make_policy("omni", 1).value();
  RoutingRequest request;
  request.prompt_tokens = 10000;
  EXPECT_EQ(policy->choose_prefill(request, view), 1u);
  view.prefill_pool[0].queued_long_prefills = 0;
  EXPECT_EQ(policy->choose_prefill(request, view), 0u);
}

TEST(Policies, RandomIsDeterministicForASeedAndCoversThePool) {
  FakeView view;
  view.prefill_pool = pool(Role::kPrefill, {0, 0, 0, 0});
  view.decode_pool = pool(Role::kDecode, {0});
  auto a = make_policy("random", 9).value();
  auto b = make_policy("random", 9).value();
  std::set<std::uint32_t> seen;
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t x = a->choose_prefill({}, view).value();
    EXPECT_EQ(x, b->choose_prefill({}, view));
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
}  // namespace omni::cluster
