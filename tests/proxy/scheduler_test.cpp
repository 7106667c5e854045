#include "omni/proxy/scheduler.hpp"

#include <gtest/gtest.h>

#include <map>

namespace omni::proxy {
namespace {

class ProxySchedulerTest : public ::testing::Test {
 protected:
  void make(SchedulerOptions options = {}, std::string policy = "least-outstanding") {
    auto made = sched::make_placement_policy(policy);
    ASSERT_TRUE(made.ok());
    scheduler = std::make_unique<Scheduler>(clock, options, std::move(*made));
    scheduler->set_nodes({{"p0", Role::kPrefill, "g1"},
                          {"p1", Role::kPrefill, "g2"},
                          {"d0", Role::kDecode, "g1"},
                          {"d1", Role::kDecode, "g2"}});
  }
  static Ticket ticket(std::uint64_t id, Role role, std::uint64_t prompt, std::string group = "") {
    Ticket t;
    t.id = id;
    t.role = role;
    t.prompt_tokens = prompt;
    t.max_tokens = 10;
    t.group = std::move(group);
    return t;
  }
  std::uint32_t id_of(const std::string& name) {
    for (const auto& n : scheduler->nodes()) {
      if (n.spec.name == name) return n.id;
    }
    ADD_FAILURE() << "no node " << name;
    return 0;
  }
  // Submits and schedules one ticket; returns the chosen node's name or the error code name.
  std::string place(Ticket t) {
    EXPECT_TRUE(scheduler->submit(std::move(t)).ok());
    auto decisions = scheduler->schedule();
    if (decisions.empty()) return "waiting";
    EXPECT_EQ(decisions.size(), 1u);
    if (!decisions[0].lease) return std::string(error_code_name(decisions[0].lease.error().code));
    last = *decisions[0].lease;
    for (const auto& n : scheduler->nodes()) {
      if (n.id == last.node) return n.spec.name;
    }
    return "?";
  }

  ManualClock clock;
  std::unique_ptr<Scheduler> scheduler;
  Lease last;
};

TEST_F(ProxySchedulerTest, PicksLeastOutstandingTokensCountedAtDispatch) {
  make();
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 100)), "p0");  // tie: lowest id
  EXPECT_EQ(place(ticket(2, Role::kPrefill, 50)), "p1");   // p0 holds 100 now
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 10)), "p1");   // 50 < 100
  const Lease third = last;
  scheduler->release(third, Outcome::kSuccess);
  EXPECT_EQ(place(ticket(4, Role::kPrefill, 10)), "p1");  // 50 < 100 still
  const auto nodes = scheduler->nodes();
  EXPECT_EQ(nodes[0].load.outstanding_tokens, 100u);
  EXPECT_EQ(nodes[1].load.outstanding_tokens, 60u);
  EXPECT_EQ(nodes[1].load.running, 2u);
}

// The fleet sync's seam: the other replicas' load on a node counts as if this core had
// dispatched it, for the policy and for the thresholds; and this core's own load changes are
// told to the observer that publishes them.
TEST_F(ProxySchedulerTest, TheOtherReplicasLoadCountsForThePolicyAndTheThresholds) {
  make();
  scheduler->report_fleet_load("p0", FleetLoad{500, 500, 3});
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 100)), "p1") << "p0 is busier fleet-wide";
  EXPECT_EQ(place(ticket(2, Role::kPrefill, 100)), "p1") << "100 here < 500 elsewhere";
  scheduler->report_fleet_load("p0", FleetLoad{});
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 100)), "p0");
  EXPECT_EQ(scheduler->nodes()[0].load.outstanding_tokens, 100u) << "own counts stay own";
}

TEST_F(ProxySchedulerTest, ANodeFullFleetWideTakesNothing) {
  SchedulerOptions options;
  options.node_limits = {1'000'000, 2};
  make(options);
  scheduler->report_fleet_load("d0", FleetLoad{20, 0, 2});
  scheduler->report_fleet_load("d1", FleetLoad{20, 0, 1});
  EXPECT_EQ(place(ticket(1, Role::kDecode, 10)), "d1");
  EXPECT_EQ(place(ticket(2, Role::kDecode, 10)), "waiting") << "2 running on each, fleet-wide";
  scheduler->report_fleet_load("d0", FleetLoad{});
  EXPECT_EQ(scheduler->schedule().size(), 1u) << "the other replica released: it goes now";
}

class RecordingLoadObserver final : public LoadObserver {
 public:
  void on_load_change(const NodeSpec& node, std::int64_t tokens, std::int64_t prompt,
                      std::int32_t running) override {
    changes.push_back(node.name + " " + std::to_string(tokens) + " " + std::to_string(prompt) +
                      " " + std::to_string(running));
  }
  std::vector<std::string> changes;
};

TEST_F(ProxySchedulerTest, EveryOwnLoadChangeIsToldToTheLoadObserver) {
  RecordingLoadObserver observer;
  SchedulerOptions options;
  options.load_observer = &observer;
  make(options);
  EXPECT_EQ(place(ticket(1, Role::kDecode, 100)), "d0");
  scheduler->release(last, Outcome::kSuccess);
  EXPECT_EQ(observer.changes, (std::vector<std::string>{"d0 110 100 1", "d0 -110 -100 -1"}))
      << "one change per dispatch and one per release";
}

TEST_F(ProxySchedulerTest, DecodeLoadIncludesOutputAndStaysInTheGroup) {
  make();
  EXPECT_EQ(place(ticket(1, Role::kDecode, 100, "g2")), "d1");
  EXPECT_EQ(last.tokens, 110u);
  EXPECT_EQ(place(ticket(2, Role::kDecode, 100, "g2")), "d1");  // d0 is idle but in g1
  EXPECT_EQ(place(ticket(3, Role::kDecode, 100)), "d0");
}

TEST_F(ProxySchedulerTest, WaitsWhenEveryNodeIsOverItsThresholdsThenAgesFairly) {
  SchedulerOptions options;
  options.node_limits = {1000, 1};
  make(options);
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 10)), "p0");
  const Lease a = last;
  EXPECT_EQ(place(ticket(2, Role::kPrefill, 10)), "p1");
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 5000)), "waiting");  // long, queued first
  clock.advance(std::chrono::seconds(2));                        // aged by 2 s = 8192 tokens
  EXPECT_TRUE(scheduler->submit(ticket(4, Role::kPrefill, 10)).ok());
  EXPECT_EQ(scheduler->waiting(), 2u);
  scheduler->release(a, Outcome::kSuccess);
  auto decisions = scheduler->schedule();
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].ticket, 3u);  // aging beat shortness: 5000 - 8192 < 10
  EXPECT_EQ(scheduler->waiting(), 1u);
}

TEST_F(ProxySchedulerTest, ShorterFirstWithoutAging) {
  SchedulerOptions options;
  options.node_limits = {1000, 1};
  make(options);
  place(ticket(1, Role::kPrefill, 10));
  const Lease a = last;
  place(ticket(2, Role::kPrefill, 10));
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 5000)), "waiting");
  EXPECT_TRUE(scheduler->submit(ticket(4, Role::kPrefill, 10)).ok());
  scheduler->release(a, Outcome::kSuccess);
  auto decisions = scheduler->schedule();
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].ticket, 4u);
}

TEST_F(ProxySchedulerTest, FullQueueIsResourceExhaustedAndOldTicketsTimeOut) {
  SchedulerOptions options;
  options.node_limits = {1000, 1};
  options.queue_capacity = 1;
  options.queue_timeout = std::chrono::seconds(3);
  make(options);
  place(ticket(1, Role::kPrefill, 10));
  place(ticket(2, Role::kPrefill, 10));
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 10)), "waiting");
  const Status full = scheduler->submit(ticket(4, Role::kPrefill, 10));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kResourceExhausted);
  clock.advance(std::chrono::seconds(3));
  auto decisions = scheduler->schedule();
  ASSERT_EQ(decisions.size(), 1u);
  ASSERT_FALSE(decisions[0].lease.ok());
  EXPECT_EQ(decisions[0].lease.error().code, ErrorCode::kTimeout);
  EXPECT_EQ(scheduler->waiting(), 0u);
}

TEST_F(ProxySchedulerTest, TriedNodesAreSkippedAndExhaustionFailsAtOnce) {
  make();
  Ticket t = ticket(1, Role::kPrefill, 10);
  t.tried = {id_of("p0")};
  EXPECT_EQ(place(t), "p1");
  Ticket u = ticket(2, Role::kPrefill, 10);
  u.tried = {id_of("p0"), id_of("p1")};
  EXPECT_EQ(place(u), "unavailable");
}

TEST_F(ProxySchedulerTest, ConsecutiveFailuresOpenTheCircuitThenATrialDecides) {
  SchedulerOptions options;
  options.failures_to_eject = 2;
  options.ejection_time = std::chrono::seconds(5);
  make(options);
  Ticket t = ticket(1, Role::kPrefill, 10);
  t.tried = {id_of("p1")};
  for (std::uint64_t i = 0; i < 2; ++i) {
    Ticket again = t;
    again.id = 10 + i;
    EXPECT_EQ(place(again), "p0");
    scheduler->release(last, Outcome::kFailure);
  }
  EXPECT_EQ(scheduler->nodes()[0].health, NodeHealth::kEjected);
  EXPECT_EQ(place(ticket(20, Role::kPrefill, 10)), "p1");  // p0 is out
  scheduler->release(last, Outcome::kSuccess);
  clock.advance(std::chrono::seconds(5));
  EXPECT_EQ(place(ticket(21, Role::kPrefill, 10)), "p0");  // half-open: one trial
  const Lease trial = last;
  EXPECT_EQ(scheduler->nodes()[0].health, NodeHealth::kTrial);
  EXPECT_EQ(place(ticket(22, Role::kPrefill, 10)), "p1");  // no second request during the trial
  scheduler->release(trial, Outcome::kFailure);            // trial failed: ejected for 10 s
  EXPECT_EQ(scheduler->nodes()[0].health, NodeHealth::kEjected);
  clock.advance(std::chrono::seconds(9));
  scheduler->schedule();
  EXPECT_EQ(scheduler->nodes()[0].health, NodeHealth::kEjected);
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(place(ticket(23, Role::kPrefill, 0)), "p0");
  scheduler->release(last, Outcome::kSuccess);
  EXPECT_EQ(scheduler->nodes()[0].health, NodeHealth::kUp);
}

// Every health change reaches the observer once, with its cause (the live proxy logs them).
struct HealthChanges final : SchedulerObserver {
  struct Change {
    std::string node;
    NodeHealth from, to;
    HealthCause cause;
    Duration cool_down;
  };
  std::vector<Change> seen;
  void on_prefix_lookup(std::uint32_t) override {}
  void on_health_change(const NodeSpec& node, NodeHealth from, NodeHealth to, HealthCause cause,
                        Duration cool_down) override {
    seen.push_back({node.name, from, to, cause, cool_down});
  }
};

TEST_F(ProxySchedulerTest, TheObserverHearsEveryHealthChangeWithItsCause) {
  HealthChanges changes;
  SchedulerOptions options;
  options.failures_to_eject = 1;
  options.ejection_time = std::chrono::seconds(5);
  options.observer = &changes;
  make(options);
  scheduler->report_probe(id_of("d0"), false);  // down
  scheduler->report_probe(id_of("d0"), false);  // still down: nothing new
  scheduler->report_probe(id_of("d0"), true);   // up again
  const std::string first = place(ticket(1, Role::kPrefill, 10));
  const Lease failed = last;
  scheduler->release(failed, Outcome::kFailure);  // ejected for 5 s
  clock.advance(std::chrono::seconds(5));
  place(ticket(2, Role::kPrefill, 10));  // a pass: the cool-down is over, the node on trial
  using H = NodeHealth;
  using C = HealthCause;
  ASSERT_EQ(changes.seen.size(), 4u);
  EXPECT_EQ(changes.seen[0].node, "d0");
  EXPECT_EQ(changes.seen[0].to, H::kDown);
  EXPECT_EQ(changes.seen[0].cause, C::kProbeFailed);
  EXPECT_EQ(changes.seen[1].from, H::kDown);
  EXPECT_EQ(changes.seen[1].to, H::kUp);
  EXPECT_EQ(changes.seen[1].cause, C::kProbeRecovered);
  EXPECT_EQ(changes.seen[2].node, first);
  EXPECT_EQ(changes.seen[2].to, H::kEjected);
  EXPECT_EQ(changes.seen[2].cause, C::kConsecutiveFailures);
  EXPECT_EQ(changes.seen[2].cool_down, std::chrono::seconds(5));
  EXPECT_EQ(changes.seen[3].node, first);
  EXPECT_EQ(changes.seen[3].from, H::kEjected);
  EXPECT_EQ(changes.seen[3].to, H::kTrial);
  EXPECT_EQ(changes.seen[3].cause, C::kCoolDownOver);
}

// The policy's inputs reach an observer that asks for them (the live proxy at debug level),
// with the candidate chosen; one that does not ask is never handed them.
struct Placements final : SchedulerObserver {
  bool wanted = true;
  struct Seen {
    std::uint64_t ticket;
    std::vector<std::pair<std::string, std::uint64_t>> outstanding;  // node, tokens
    std::size_t chosen;
  };
  std::vector<Seen> seen;
  void on_prefix_lookup(std::uint32_t) override {}
  bool wants_placements() const override { return wanted; }
  void on_placement(const Ticket& ticket, std::span<const PlacementInput> inputs,
                    std::size_t chosen) override {
    Seen one{ticket.id, {}, chosen};
    for (const PlacementInput& input : inputs) {
      one.outstanding.emplace_back(input.node->name, input.candidate.outstanding_tokens);
    }
    seen.push_back(std::move(one));
  }
};

TEST_F(ProxySchedulerTest, AnObserverThatAsksSeesEachPlacementsInputs) {
  Placements placements;
  SchedulerOptions options;
  options.observer = &placements;
  make(options);
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 100)), "p0");
  EXPECT_EQ(place(ticket(2, Role::kPrefill, 50)), "p1");
  ASSERT_EQ(placements.seen.size(), 2u);
  EXPECT_EQ(placements.seen[1].ticket, 2u);
  using Pairs = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(placements.seen[1].outstanding, (Pairs{{"p0", 100}, {"p1", 0}}));  // before dispatch
  EXPECT_EQ(placements.seen[1].outstanding[placements.seen[1].chosen].first, "p1");
  placements.wanted = false;
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 10)), "p1");
  EXPECT_EQ(placements.seen.size(), 2u);
}

TEST_F(ProxySchedulerTest, NeutralOutcomesDoNotCountAgainstANode) {
  SchedulerOptions options;
  options.failures_to_eject = 1;
  make(options);
  place(ticket(1, Role::kPrefill, 10));
  scheduler->release(last, Outcome::kNeutral);
  EXPECT_EQ(scheduler->nodes()[0].health, NodeHealth::kUp);
  EXPECT_EQ(scheduler->nodes()[0].failures, 0u);
}

// A role whose every node is down by its probes keeps a request waiting (one late probe must
// not fail everything at once); a node back up takes it.
TEST_F(ProxySchedulerTest, ProbesTakeNodesDownAndBringThemBack) {
  make();
  scheduler->report_probe(id_of("d0"), false);
  scheduler->report_probe(id_of("d1"), false);
  EXPECT_FALSE(scheduler->usable(Role::kDecode));
  EXPECT_EQ(place(ticket(1, Role::kDecode, 10)), "waiting");
  scheduler->report_probe(id_of("d1"), true);
  EXPECT_TRUE(scheduler->usable(Role::kDecode));
  auto decisions = scheduler->schedule();
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].lease->node, id_of("d1"));
}

// A request that waited out the queue timeout because its role had no usable node says so,
// not that the nodes were busy.
TEST_F(ProxySchedulerTest, ATimeoutWithEveryNodeDownSaysSo) {
  SchedulerOptions options;
  options.queue_timeout = std::chrono::seconds(3);
  make(options);
  scheduler->report_probe(id_of("d0"), false);
  scheduler->report_probe(id_of("d1"), false);
  EXPECT_EQ(place(ticket(1, Role::kDecode, 10)), "waiting");
  clock.advance(std::chrono::seconds(3));
  auto decisions = scheduler->schedule();
  ASSERT_EQ(decisions.size(), 1u);
  ASSERT_FALSE(decisions[0].lease.ok());
  EXPECT_EQ(decisions[0].lease.error().code, ErrorCode::kTimeout);
  EXPECT_NE(decisions[0].lease.error().message.find("no usable decode node"), std::string::npos)
      << decisions[0].lease.error().message;
}

// Draining every node of a role (an operator's word) fails new requests at once too.
TEST_F(ProxySchedulerTest, EveryNodeDrainingFailsANewRequestAtOnce) {
  make();
  ASSERT_TRUE(scheduler->set_draining("p0", true).ok());
  ASSERT_TRUE(scheduler->set_draining("p1", true).ok());
  ASSERT_TRUE(scheduler->submit(ticket(1, Role::kPrefill, 10)).ok());
  auto refused = scheduler->schedule();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_FALSE(refused[0].lease.ok());
}

TEST_F(ProxySchedulerTest, DrainingNodesFinishButTakeNothingNew) {
  make();
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 10)), "p0");
  const Lease running = last;
  ASSERT_TRUE(scheduler->set_draining("p1", true).ok());
  EXPECT_EQ(place(ticket(2, Role::kPrefill, 10)), "p0");
  EXPECT_FALSE(scheduler->set_draining("nope", true).ok());
  scheduler->release(running, Outcome::kSuccess);
  EXPECT_EQ(scheduler->nodes()[0].load.running, 1u);
}

TEST_F(ProxySchedulerTest, ReloadKeepsKnownNodesAndForgetsRemovedOnesOnceIdle) {
  make();
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 10)), "p0");
  const Lease running = last;
  const std::uint32_t p0 = id_of("p0");
  scheduler->set_nodes(
      {{"p0", Role::kPrefill, ""}, {"p2", Role::kPrefill, ""}, {"d0", Role::kDecode, ""}});
  EXPECT_EQ(id_of("p0"), p0);  // same id, same load
  EXPECT_EQ(scheduler->nodes()[0].load.running, 1u);
  EXPECT_EQ(place(ticket(2, Role::kPrefill, 10)), "p2");
  scheduler->set_nodes({{"p2", Role::kPrefill, ""}, {"d0", Role::kDecode, ""}});
  bool p0_kept = false;
  for (const auto& n : scheduler->nodes()) p0_kept = p0_kept || (n.spec.name == "p0" && n.removed);
  EXPECT_TRUE(p0_kept);  // still running a request
  scheduler->release(running, Outcome::kSuccess);
  for (const auto& n : scheduler->nodes()) EXPECT_NE(n.spec.name, "p0");
}

TEST_F(ProxySchedulerTest, CancelRemovesAWaitingTicket) {
  SchedulerOptions options;
  options.node_limits = {1, 1};
  make(options);
  place(ticket(1, Role::kPrefill, 10));
  place(ticket(2, Role::kPrefill, 10));
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 10)), "waiting");
  EXPECT_TRUE(scheduler->cancel(3));
  EXPECT_FALSE(scheduler->cancel(3));
  EXPECT_EQ(scheduler->waiting(), 0u);
}

// Many nodes failing together (a shared dependency down, a bad deploy) must not empty a pool:
// at most max_ejection_percent of a role is ejected at once, at least one may always be.
TEST_F(ProxySchedulerTest, EjectionFloorKeepsAPoolRoutable) {
  SchedulerOptions options;
  options.failures_to_eject = 1;
  options.max_ejection_percent = 50;
  make(options);
  const std::uint32_t p0 = id_of("p0");
  const std::uint32_t p1 = id_of("p1");
  EXPECT_EQ(place(ticket(1, Role::kPrefill, 10)), "p0");
  scheduler->release(last, Outcome::kFailure);
  Ticket second = ticket(2, Role::kPrefill, 10);
  second.tried = {p0};
  EXPECT_EQ(place(second), "p1");
  scheduler->release(last, Outcome::kFailure);
  std::map<std::string, NodeHealth> health;
  for (const auto& n : scheduler->nodes()) health[n.spec.name] = n.health;
  EXPECT_EQ(health["p0"], NodeHealth::kEjected);
  EXPECT_EQ(health["p1"], NodeHealth::kUp) << "half of two prefill nodes may be out, not both";
  EXPECT_EQ(place(ticket(3, Role::kPrefill, 10)), "p1");
  (void)p1;
}

TEST(ProxyRoundRobin, TakesCandidatesInTurn) {
  ManualClock clock;
  auto policy = sched::make_placement_policy("round-robin");
  ASSERT_TRUE(policy.ok());
  Scheduler scheduler(clock, {}, std::move(*policy));
  scheduler.set_nodes(
      {{"a", Role::kDecode, ""}, {"b", Role::kDecode, ""}, {"c", Role::kDecode, ""}});
  std::vector<std::uint32_t> chosen;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    Ticket t;
    t.id = i;
    t.role = Role::kDecode;
    ASSERT_TRUE(scheduler.submit(t).ok());
    auto d = scheduler.schedule();
    ASSERT_EQ(d.size(), 1u);
    chosen.push_back(d[0].lease->node);
  }
  EXPECT_EQ(chosen, (std::vector<std::uint32_t>{0, 1, 2, 0}));
  EXPECT_FALSE(sched::make_placement_policy("nope").ok());
}

}  // namespace
}  // namespace omni::proxy
