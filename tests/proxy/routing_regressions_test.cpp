// Routing failures seen in the field, as deterministic tests of the one gateway core (the
// Scheduler omni-proxy and omni-cluster both run) with its default policy, omni. Each case
// describes, in our words, a bug class of the peer gateways, states the bad outcome, and
// asserts the core does not show it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {
namespace {

using namespace std::chrono_literals;

std::vector<std::uint64_t> blocks(std::uint64_t first, std::size_t n) {
  std::vector<std::uint64_t> h(n);
  std::iota(h.begin(), h.end(), first);
  return h;
}

kvcache::KVEventBatch stored(const std::vector<std::uint64_t>& hashes) {
  kvcache::BlockStored event;
  for (std::uint64_t h : hashes) event.block_hashes.emplace_back(h);
  event.block_size = 16;
  kvcache::KVEventBatch batch;
  batch.events.emplace_back(std::move(event));
  return batch;
}

class RoutingRegression : public ::testing::Test {
 protected:
  void make(std::size_t prefill_nodes, std::string policy = "omni", SchedulerOptions options = {}) {
    auto made = sched::make_placement_policy(policy);
    ASSERT_TRUE(made.ok());
    core = std::make_unique<Scheduler>(clock, options, std::move(*made));
    for (std::size_t i = 0; i < prefill_nodes; ++i) {
      specs.push_back({"p" + std::to_string(i), Role::kPrefill, "", true});
    }
    specs.push_back({"d0", Role::kDecode, "", false});
    ids = core->set_nodes(specs);
  }
  Ticket prefill(std::uint64_t prompt, std::vector<std::uint64_t> hashes = {}) {
    Ticket t;
    t.id = next++;
    t.role = Role::kPrefill;
    t.prompt_tokens = prompt;
    t.max_tokens = 64;
    t.block_hashes = std::move(hashes);
    return t;
  }
  // Submits every ticket, then one pass: as a burst that arrives within one scheduler tick.
  std::vector<Lease> burst(std::vector<Ticket> tickets) {
    for (Ticket& t : tickets) EXPECT_TRUE(core->submit(std::move(t)).ok());
    std::vector<Lease> leases;
    for (auto& d : core->schedule()) {
      EXPECT_TRUE(d.lease.ok());
      if (d.lease) leases.push_back(*d.lease);
    }
    return leases;
  }
  static std::map<std::uint32_t, int> per_node(const std::vector<Lease>& leases) {
    std::map<std::uint32_t, int> count;
    for (const Lease& l : leases) ++count[l.node];
    return count;
  }
  static int busiest(const std::vector<Lease>& leases) {
    int most = 0;
    for (const auto& [node, n] : per_node(leases)) most = std::max(most, n);
    return most;
  }

  ManualClock clock;
  std::unique_ptr<Scheduler> core;
  std::vector<NodeSpec> specs;
  std::vector<std::uint32_t> ids;
  std::uint64_t next = 1;
};

// A burst arrives within one metrics interval: every engine still reports zero load, so a
// router that trusts engine-reported load sends the whole burst to the first "idle" engine.
// Bad outcome: one engine gets > 80% of 64 equal requests over 8 idle engines. (What the
// engines cannot start within omni's hold bound waits in the gateway instead, and is placed
// as they free up: that is admission, not herding.)
TEST_F(RoutingRegression, BurstWithinOneMetricsIntervalDoesNotHerd) {
  make(8);
  std::vector<Ticket> tickets;
  for (int i = 0; i < 64; ++i) tickets.push_back(prefill(4000, blocks(1000 * (i + 1), 250)));
  const auto leases = burst(std::move(tickets));
  ASSERT_GE(leases.size(), 16u);
  EXPECT_EQ(leases.size() + core->waiting(), 64u);
  EXPECT_LE(busiest(leases), static_cast<double>(leases.size()) * 0.8);
  EXPECT_LE(static_cast<std::size_t>(busiest(leases)), 2 * leases.size() / 8)
      << "not even twice the fair share of 8";
  EXPECT_EQ(per_node(leases).size(), 8u) << "every engine takes part";
}

// An engine that just restarted reports zero load (and its KV events restart), while the
// gateway still has requests in flight on it. Bad outcome: the next burst piles onto it.
TEST_F(RoutingRegression, RestartedEngineReportingZeroLoadIsNotAMagnet) {
  make(4);
  std::vector<Ticket> first;
  for (int i = 0; i < 8; ++i) first.push_back(prefill(8000, blocks(100000 * (i + 1), 500)));
  const auto in_flight = burst(std::move(first));
  ASSERT_EQ(in_flight.size(), 8u);
  for (std::uint32_t id : ids) core->report_engine_load(id, EngineLoad{4, 4, 0.6});
  core->report_engine_load(ids[2], EngineLoad{0, 0, 0.0});  // restarted: "idle"
  core->apply_kv_events("p2", stored({}), /*restart=*/true);
  std::vector<Ticket> next_burst;
  for (int i = 0; i < 8; ++i) next_burst.push_back(prefill(8000, blocks(900000 + 1000 * i, 500)));
  const auto leases = burst(std::move(next_burst));
  EXPECT_LE(per_node(leases)[ids[2]], 3) << "the restarted engine took most of the burst";
}

// An engine's load report is seconds old (slow /metrics): it still says idle although the
// gateway has just sent it work. Bad outcome: everything keeps going to that engine.
TEST_F(RoutingRegression, SlowLoadReportDoesNotHideWorkTheGatewaySent) {
  make(4);
  for (std::uint32_t id : ids) core->report_engine_load(id, EngineLoad{0, 0, 0.0});
  std::vector<Lease> all;
  for (int i = 0; i < 12; ++i) {  // one at a time, none finishes, reports never refresh
    auto l = burst({prefill(6000, blocks(50000 * (i + 1), 375))});
    all.insert(all.end(), l.begin(), l.end());
    clock.advance(10ms);
  }
  EXPECT_LE(busiest(all), 4);
}

// Paced multi-turn agent sessions with long think times: between turns the engine that holds
// every session's prefix looks idle and attracts all the follow-ups at once. Bad outcome: all
// eight follow-up turns (16k of history, 8k new tokens each) queue on that one engine although
// seven are idle and the last turn there would wait longer than a full prefill elsewhere.
TEST_F(RoutingRegression, IdleLookingSessionHolderDoesNotAttractEverySessionAtOnce) {
  make(8);
  std::vector<std::vector<std::uint64_t>> sessions;
  for (int s = 0; s < 8; ++s) {
    sessions.push_back(blocks(1'000'000 * (s + 1), 1000));  // 16k-token histories
    core->apply_kv_events("p0", stored(sessions.back()));   // all cached on p0
  }
  clock.advance(30s);  // think time: p0 finished everything and looks idle
  std::vector<Ticket> turns;
  for (int s = 0; s < 8; ++s) {
    auto h = sessions[s];
    const auto extra = blocks(50'000'000 + 1000 * s, 500);  // +8k new tokens
    h.insert(h.end(), extra.begin(), extra.end());
    turns.push_back(prefill(h.size() * 16, h));
  }
  const auto leases = burst(std::move(turns));
  ASSERT_EQ(leases.size(), 8u);
  const int on_holder = per_node(leases)[ids[0]];
  EXPECT_GE(on_holder, 1) << "the cache is worth using";
  EXPECT_LT(on_holder, 8) << "every session piled onto the engine holding their prefixes";
}

// Ties always broken in favour of the same engine: isolated requests, each finished before the
// next arrives, all land on engine 0. Bad outcome: one engine serves (and caches) everything.
TEST_F(RoutingRegression, TiesAreNotAlwaysBrokenTowardsTheSameEngine) {
  make(4);
  std::map<std::uint32_t, int> used;
  for (int i = 0; i < 8; ++i) {
    auto leases = burst({prefill(1000, blocks(10'000 * (i + 1), 62))});
    ASSERT_EQ(leases.size(), 1u);
    ++used[leases[0].node];
    clock.advance(1s);
    core->release(leases[0], Outcome::kSuccess);
  }
  EXPECT_EQ(used.size(), 4u) << "isolated requests must rotate over equal engines";
}

// A cache-aware choice that keeps sending to the engine whose queue is already the longest:
// one engine caches a popular prefix, and every request sharing it goes there. Bad outcome: 32
// requests with that prefix all queue on it while three engines idle.
TEST_F(RoutingRegression, CacheAffinityStopsWhereTheQueueCostsMoreThanTheCacheSaves) {
  make(4);
  const auto popular = blocks(7'000'000, 500);  // an 8k-token shared document
  core->apply_kv_events("p0", stored(popular));
  std::vector<Ticket> questions;
  for (int i = 0; i < 32; ++i) {
    auto h = popular;
    const auto q = blocks(80'000'000 + 1000 * i, 16);
    h.insert(h.end(), q.begin(), q.end());
    questions.push_back(prefill(h.size() * 16, h));
  }
  const auto leases = burst(std::move(questions));
  ASSERT_EQ(leases.size(), 32u);
  EXPECT_GE(per_node(leases)[ids[0]], 8) << "the cached prefix is worth a queue";
  EXPECT_LT(per_node(leases)[ids[0]], 32 * 0.8) << "the longest queue kept getting more";
}

// An engine removed and re-added under the same address: stale cache entries (and stale load)
// of its old life must not attract work or underflow when its old leases end.
TEST_F(RoutingRegression, EngineRemovedAndReAddedStartsWithoutItsOldCacheOrLoad) {
  make(2);
  const auto prefix = blocks(3'000'000, 250);
  core->apply_kv_events("p0", stored(prefix));
  auto old_leases = burst({prefill(4000, prefix), prefill(4000, prefix)});
  ASSERT_EQ(old_leases.size(), 2u);
  ASSERT_EQ(per_node(old_leases)[ids[0]], 2) << "the cache attracted both first";
  auto without = specs;
  without.erase(without.begin());
  core->set_nodes(without);  // p0 gone (kept until its leases end)
  core->set_nodes(specs);    // and back, same address
  // Its old entries are gone: a request with that prefix is placed by load alone.
  auto after = burst({prefill(4000, prefix)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].node, ids[1]) << "stale cache entries attracted it to the loaded engine";
  for (const Lease& l : old_leases) core->release(l, Outcome::kSuccess);
  for (const NodeStatus& n : core->nodes()) {
    if (n.spec.name != "p0") continue;
    EXPECT_EQ(n.load.running, 0u);
    EXPECT_EQ(n.load.outstanding_tokens, 0u);
  }
}

// KV events lost or delayed by seconds: an engine that was sent new blocks but never confirmed
// them must stop attracting work by its cache; a follow-up within the predicted TTL still goes
// where its prefix was just placed, before the events arrive.
TEST_F(RoutingRegression, LostOrDelayedKvEventsNeitherAttractForeverNorForgetAtOnce) {
  SchedulerOptions options;
  options.prefix.predicted_ttl = 2s;
  options.prefix.stale_after = 5s;
  make(2, "omni", options);
  const auto doc = blocks(4'000'000, 500);
  auto first = burst({prefill(8000, doc)});
  ASSERT_EQ(first.size(), 1u);
  const std::uint32_t home = first[0].node;
  core->release(first[0], Outcome::kSuccess);
  clock.advance(500ms);  // events delayed: the prediction carries the follow-up
  auto follow = burst({prefill(8000, doc)});
  ASSERT_EQ(follow.size(), 1u);
  EXPECT_EQ(follow[0].node, home);
  core->release(follow[0], Outcome::kSuccess);
  // The events never come: past stale_after the node's cache attracts nothing.
  clock.advance(10s);
  core->apply_kv_events(home == ids[0] ? "p1" : "p0", stored(doc));  // the other one has it now
  auto later = burst({prefill(8000, doc)});
  ASSERT_EQ(later.size(), 1u);
  EXPECT_NE(later[0].node, home);
  bool stale_seen = false;
  for (const NodeStatus& n : core->nodes()) stale_seen = stale_seen || (n.id == home && n.kv_stale);
  EXPECT_TRUE(stale_seen);
}

// A ticket that waits in the gateway across passes keeps everything it came with. (Compacting the
// queue once moved an entry onto itself, which left its block hashes and its "already tried"
// list empty: under load every held request became cache-blind and a retry could go back to the
// node that had just failed it.)
TEST_F(RoutingRegression, TicketsHeldAcrossPassesKeepTheirPrefixAndTriedNodes) {
  SchedulerOptions options;
  options.node_limits = {1'000'000, 1};  // one request per node: the rest wait
  make(2, "omni", options);
  const auto doc = blocks(6'000'000, 250);
  core->apply_kv_events("p1", stored(doc));
  auto busy = burst({prefill(4000, blocks(1, 250)), prefill(4000, blocks(2000, 250))});
  ASSERT_EQ(busy.size(), 2u);
  const Lease on_p0 = busy[0].node == ids[0] ? busy[0] : busy[1];
  const Lease on_p1 = busy[0].node == ids[0] ? busy[1] : busy[0];
  // A request whose prefix is on p1 waits through several passes.
  ASSERT_TRUE(core->submit(prefill(4000, doc)).ok());
  for (int pass = 0; pass < 3; ++pass) EXPECT_TRUE(core->schedule().empty());
  core->release(on_p0, Outcome::kSuccess);
  core->release(on_p1, Outcome::kSuccess);
  auto placed = core->schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].lease->node, ids[1]) << "the held request lost its block hashes";
  EXPECT_EQ(placed[0].lease->uncached_tokens, 0u);
  core->release(*placed[0].lease, Outcome::kSuccess);
  // A retry that must not go back to p0 waits while only p0 is free.
  busy = burst({prefill(4000, blocks(9000, 250)), prefill(4000, blocks(9900, 250))});
  ASSERT_EQ(busy.size(), 2u);
  Ticket retry = prefill(10);
  retry.tried = {ids[0]};
  ASSERT_TRUE(core->submit(std::move(retry)).ok());
  for (int pass = 0; pass < 3; ++pass) EXPECT_TRUE(core->schedule().empty());
  for (const Lease& l : busy) {
    if (l.node == ids[0]) core->release(l, Outcome::kSuccess);
  }
  EXPECT_TRUE(core->schedule().empty()) << "the retry lost its tried list and went back to p0";
  for (const Lease& l : busy) {
    if (l.node == ids[1]) core->release(l, Outcome::kSuccess);
  }
  placed = core->schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].lease->node, ids[1]);
}

}  // namespace
}  // namespace omni::proxy
