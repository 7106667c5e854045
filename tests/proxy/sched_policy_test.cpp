// The omni::sched policies inside the proxy's Scheduler: the adapter's mapping, the prefix
// index (predicted and event-fed), staleness, reload and holding at the gateway.
#include <gtest/gtest.h>

#include <numeric>

#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {
namespace {

using namespace std::chrono_literals;

// A prompt of `blocks` full blocks whose hashes start at `first` (same `first`: same prefix).
std::vector<std::uint64_t> hashes(std::uint64_t first, std::size_t blocks) {
  std::vector<std::uint64_t> h(blocks);
  std::iota(h.begin(), h.end(), first);
  return h;
}

kvcache::KVEventBatch stored(const std::vector<std::uint64_t>& blocks) {
  kvcache::BlockStored event;
  for (std::uint64_t h : blocks) event.block_hashes.emplace_back(h);
  event.block_size = 16;
  kvcache::KVEventBatch batch;
  batch.events.emplace_back(std::move(event));
  return batch;
}

class SchedPolicyTest : public ::testing::Test {
 protected:
  void make(const std::string& policy, SchedulerOptions options = {}) {
    auto made = sched::make_placement_policy(policy);
    ASSERT_TRUE(made.ok()) << policy;
    scheduler = std::make_unique<Scheduler>(clock, options, std::move(*made));
    scheduler->set_nodes(nodes);
  }
  Ticket ticket(Role role, std::uint64_t prompt, std::vector<std::uint64_t> blocks = {}) {
    Ticket t;
    t.id = next_id++;
    t.role = role;
    t.prompt_tokens = prompt;
    t.max_tokens = 10;
    t.block_hashes = std::move(blocks);
    return t;
  }
  // Places one ticket; returns the node's name, "waiting" or the error code's name.
  std::string place(Ticket t) {
    EXPECT_TRUE(scheduler->submit(std::move(t)).ok());
    return decide();
  }
  std::string decide() {
    auto decisions = scheduler->schedule();
    if (decisions.empty()) return "waiting";
    if (!decisions.back().lease)
      return std::string(error_code_name(decisions.back().lease.error().code));
    last = *decisions.back().lease;
    for (const auto& n : scheduler->nodes()) {
      if (n.id == last.node) return n.spec.name;
    }
    return "?";
  }
  // Places and at once finishes one prefill of 10 blocks (160 tokens) from `first`.
  std::string prefill_and_finish(std::uint64_t first, std::size_t blocks = 10) {
    const std::string where = place(ticket(Role::kPrefill, blocks * 16, hashes(first, blocks)));
    scheduler->release(last, Outcome::kSuccess);
    return where;
  }
  const NodeStatus& status(const std::string& name) {
    statuses = scheduler->nodes();
    for (const auto& n : statuses) {
      if (n.spec.name == name) return n;
    }
    ADD_FAILURE() << "no node " << name;
    return statuses.front();
  }

  ManualClock clock;
  std::vector<NodeSpec> nodes = {{"p0", Role::kPrefill, "", false},
                                 {"p1", Role::kPrefill, "", true},
                                 {"d0", Role::kDecode, "", false}};
  std::unique_ptr<Scheduler> scheduler;
  std::vector<NodeStatus> statuses;
  Lease last;
  std::uint64_t next_id = 1;
};

TEST(ProxyPolicyRegistry, EverySchedPolicyAndLeastOutstandingByName) {
  EXPECT_EQ(sched::kDefaultPolicy, "omni");
  std::vector<std::string> names;
  for (const auto& info : sched::placement_policies()) names.push_back(info.name);
  for (const char* want : {"round-robin", "least-load", "sglang-cache-aware", "llm-d", "dynamo",
                           "omni-anchor", "omni", "least-outstanding"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    auto policy = sched::make_placement_policy(want);
    ASSERT_TRUE(policy.ok()) << want;
    EXPECT_EQ((*policy)->name(), want);
  }
  for (const auto& summary : sched::placement_policies())
    EXPECT_FALSE(summary.summary.empty()) << summary.name;
  auto unknown = sched::make_placement_policy("nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_NE(unknown.error().message.find("sglang-cache-aware"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("least-outstanding"), std::string::npos);
  EXPECT_TRUE(sched::make_placement_policy("omni:cache=2:hold=3").ok());
  auto bad = sched::make_placement_policy("omni:cache=x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cache=x"), std::string::npos);
  EXPECT_TRUE((*sched::make_placement_policy("dynamo"))->uses_prefix_matches());
  EXPECT_FALSE((*sched::make_placement_policy("least-load"))->uses_prefix_matches());
}

// The first placement's prediction keeps one prompt family on its node even when that node is
// busier; past the prediction's TTL, the engine's own events decide.
// The fleet sync's prefix seam: a placement's predicted blocks are told to the LoadObserver
// (which publishes them), and blocks another replica placed attract this core's next request
// with that prefix as its own placements do.
class PredictedBlocksRecorder final : public LoadObserver {
 public:
  void on_load_change(const NodeSpec&, std::int64_t, std::int64_t, std::int32_t) override {}
  void on_predicted_blocks(const NodeSpec& node, std::span<const std::uint64_t> hashes) override {
    told.emplace_back(node.name, std::vector<std::uint64_t>(hashes.begin(), hashes.end()));
  }
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> told;
};

TEST_F(SchedPolicyTest, APlacementsBlocksAreToldAndAnotherReplicasBlocksAttract) {
  PredictedBlocksRecorder recorder;
  SchedulerOptions options;
  options.load_observer = &recorder;
  make("sglang-cache-aware", options);
  const std::string first = prefill_and_finish(100);
  ASSERT_EQ(recorder.told.size(), 1u);
  EXPECT_EQ(recorder.told[0].first, first);
  EXPECT_EQ(recorder.told[0].second, hashes(100, 10));
  // Another replica placed the prefix starting at 500 on the other prefill node.
  const std::string other = first == "p0" ? "p1" : "p0";
  scheduler->apply_predicted_blocks(other, hashes(500, 10));
  EXPECT_EQ(place(ticket(Role::kPrefill, 160, hashes(500, 10))), other);
  scheduler->release(last, Outcome::kSuccess);
  EXPECT_EQ(place(ticket(Role::kPrefill, 160, hashes(100, 10))), first) << "its own still holds";
}

TEST_F(SchedPolicyTest, RepeatedPromptFollowsItsPrefixUnderCacheAwarePolicies) {
  for (const char* policy : {"omni", "sglang-cache-aware", "dynamo", "omni-anchor", "llm-d"}) {
    SCOPED_TRACE(policy);
    make(policy);
    const std::string home = prefill_and_finish(100);
    const std::string other = home == "p0" ? "p1" : "p0";
    // Some load on the home node only (the other one is excluded for this ticket).
    Ticket busy = ticket(Role::kPrefill, 100);
    for (const auto& n : scheduler->nodes()) {
      if (n.spec.name == other) busy.tried.push_back(n.id);
    }
    EXPECT_EQ(place(std::move(busy)), home);
    const Lease busy_lease = last;
    clock.advance(500ms);
    EXPECT_EQ(prefill_and_finish(100, 12), home);  // the same 10 blocks and a new suffix
    scheduler->release(busy_lease, Outcome::kSuccess);
    // Past the TTL predictions are gone; the other node's events say it holds the family now.
    clock.advance(5s);
    scheduler->apply_kv_events(other, stored(hashes(100, 12)));
    EXPECT_EQ(prefill_and_finish(100, 11), other);
    EXPECT_EQ(status(other).kv_events_applied, 1u);
    EXPECT_EQ(scheduler->prefix_report().lookups, 3u);
  }
}

TEST_F(SchedPolicyTest, RoundRobinAlternatesWhateverThePrefix) {
  make("round-robin");
  EXPECT_EQ(prefill_and_finish(100), "p0");
  EXPECT_EQ(prefill_and_finish(100), "p1");
  EXPECT_EQ(prefill_and_finish(100), "p0");
}

TEST_F(SchedPolicyTest, StaleNodeLosesItsAttractionUntilEventsResume) {
  SchedulerOptions options;
  options.prefix.stale_after = 10s;
  make("omni", options);
  scheduler->apply_kv_events("p1", stored(hashes(100, 10)));
  EXPECT_EQ(prefill_and_finish(100), "p1");  // exact entries attract
  // New blocks go to p1 (family B); p1 then owes events, and none come.
  scheduler->apply_kv_events("p1", stored(hashes(500, 10)));
  EXPECT_EQ(prefill_and_finish(500, 20), "p1");
  clock.advance(11s);
  EXPECT_TRUE(status("p1").kv_stale);
  EXPECT_EQ(scheduler->prefix_report().stale_nodes, 1u);
  EXPECT_EQ(prefill_and_finish(100), "p0");                  // p1's entries no longer attract
  scheduler->apply_kv_events("p1", stored(hashes(900, 1)));  // the stream is back
  EXPECT_FALSE(status("p1").kv_stale);
  clock.advance(3s);  // p0's predicted copy of family A has expired
  EXPECT_EQ(prefill_and_finish(100), "p1");
}

TEST_F(SchedPolicyTest, MalformedPayloadIsCountedAndDropped) {
  make("omni");
  const std::uint8_t junk[] = {0xc1, 0x00, 0x13};
  EXPECT_FALSE(scheduler->apply_kv_payload("p1", junk));
  EXPECT_EQ(status("p1").kv_events_dropped, 1u);
  EXPECT_EQ(status("p1").kv_events_applied, 0u);
  std::vector<std::uint8_t> good;
  kvcache::encode_batch(stored(hashes(100, 10)), good);
  EXPECT_TRUE(scheduler->apply_kv_payload("p1", good));
  EXPECT_EQ(status("p1").kv_events_applied, 1u);
  EXPECT_EQ(prefill_and_finish(100), "p1");
  scheduler->count_kv_events_dropped("p1", 3);
  EXPECT_EQ(status("p1").kv_events_dropped, 4u);
}

TEST_F(SchedPolicyTest, NodeRemovedOnReloadTakesItsEntriesAlong) {
  make("omni");
  scheduler->apply_kv_events("p1", stored(hashes(100, 10)));
  EXPECT_EQ(prefill_and_finish(100), "p1");
  place(ticket(Role::kPrefill, 160, hashes(100, 10)));  // in flight on p1 across the reload
  const Lease in_flight = last;
  scheduler->set_nodes({nodes[0], nodes[2]});
  clock.advance(3s);
  EXPECT_EQ(prefill_and_finish(100), "p0");
  scheduler->set_nodes(nodes);  // back (same id: its load was not released yet)
  scheduler->release(in_flight, Outcome::kSuccess);
  clock.advance(3s);  // p0's prediction expires too: nobody holds family A
  // p1's old entries were forgotten with its removal: ties go to the first candidate.
  EXPECT_EQ(prefill_and_finish(100), "p0");
}

TEST_F(SchedPolicyTest, HoldKeepsTheTicketWaitingUntilLoadIsReleased) {
  make("omni");  // holds when every node has more than 1.5 s (12,000 tokens) queued
  EXPECT_EQ(place(ticket(Role::kPrefill, 20000)), "p0");
  const Lease a = last;
  EXPECT_EQ(place(ticket(Role::kPrefill, 20000)), "p1");
  EXPECT_EQ(status("p0").queued_prefill_tokens, 20000u);
  EXPECT_EQ(place(ticket(Role::kPrefill, 100)), "waiting");
  EXPECT_EQ(scheduler->waiting(), 1u);
  scheduler->release(a, Outcome::kSuccess);
  EXPECT_EQ(status("p0").queued_prefill_tokens, 0u);
  EXPECT_EQ(decide(), "p0");
}

TEST_F(SchedPolicyTest, CachedTokensAreNotQueuedPrefillWork) {
  make("omni");
  scheduler->apply_kv_events("p1", stored(hashes(100, 10)));
  place(ticket(Role::kPrefill, 200, hashes(100, 12)));
  EXPECT_EQ(last.uncached_tokens, 40u);  // 200 - 10 cached blocks of 16
  EXPECT_EQ(status("p1").queued_prefill_tokens, 40u);
  EXPECT_EQ(status("p1").queued_long_prefills, 0u);
  place(ticket(Role::kPrefill, 9000));  // uncached, a whole step's budget and more
  const Lease long_one = last;
  const std::string where = last.node == status("p0").id ? "p0" : "p1";
  EXPECT_EQ(status(where).queued_long_prefills, 1u);
  scheduler->release(long_one, Outcome::kSuccess);
  const std::uint32_t p0_long = status("p0").queued_long_prefills;
  EXPECT_EQ(p0_long + status("p1").queued_long_prefills, 0u);
}

TEST_F(SchedPolicyTest, DecodeIgnoresPrefixesInPdButUsesThemWhenAggregated) {
  nodes = {{"d0", Role::kDecode, "", false}, {"d1", Role::kDecode, "", false}};
  make("omni-anchor");  // deepest match first, then least outstanding tokens
  scheduler->apply_kv_events("d1", stored(hashes(100, 10)));
  EXPECT_EQ(place(ticket(Role::kDecode, 160, hashes(100, 10))), "d0");
  SchedulerOptions aggregated;
  aggregated.aggregated = true;
  make("omni-anchor", aggregated);
  scheduler->apply_kv_events("d1", stored(hashes(100, 10)));
  EXPECT_EQ(place(ticket(Role::kDecode, 160, hashes(100, 10))), "d1");
}

}  // namespace
}  // namespace omni::proxy

namespace omni::proxy {
namespace {

// Aggregated mode: the proxy cannot see first tokens, so a request's prefill is taken to end
// at the nominal speed; its reserved output is not prefill work. Long generations therefore do
// not make `omni` hold new requests.
TEST_F(SchedPolicyTest, AggregatedPrefillEndsByEstimateAndOutputsAreNotPrefillWork) {
  nodes = {{"d0", Role::kDecode, "", false}};
  SchedulerOptions aggregated;
  aggregated.aggregated = true;
  aggregated.aggregated_prefill_tokens_per_second = 8000;
  aggregated.node_limits = {1'000'000'000, 256};  // the thresholds are not what is tested
  make("omni", aggregated);
  Ticket big = ticket(Role::kDecode, 16000);
  big.max_tokens = 200000;
  EXPECT_EQ(place(std::move(big)), "d0");
  const Lease first = last;
  EXPECT_EQ(status("d0").queued_prefill_tokens, 16000u);
  EXPECT_EQ(status("d0").outstanding_prompt_tokens, 16000u);
  EXPECT_EQ(place(ticket(Role::kDecode, 100)), "waiting");  // 2 s of prefill queued: held
  clock.advance(2001ms);                                    // its prefill is over by now
  EXPECT_EQ(decide(), "d0");
  EXPECT_EQ(status("d0").queued_prefill_tokens, 100u);  // only the second one's, still due
  for (int i = 0; i < 50; ++i) {
    Ticket stream = ticket(Role::kDecode, 10);
    stream.max_tokens = 200000;
    ASSERT_EQ(place(std::move(stream)), "d0") << i;
  }
  EXPECT_EQ(status("d0").queued_prefill_tokens, 600u);
  scheduler->release(first, Outcome::kSuccess);  // after its estimate: not subtracted twice
  EXPECT_EQ(status("d0").queued_prefill_tokens, 600u);
  EXPECT_EQ(status("d0").outstanding_prompt_tokens, 100u + 50 * 10);
}

}  // namespace
}  // namespace omni::proxy
