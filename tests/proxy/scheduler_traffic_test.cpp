// The gateway core's traffic classes (traffic.hpp): bands, aging, shedding, tenants and the
// causes of waiting, on one prefill node that takes one request at a time.
#include <gtest/gtest.h>

#include <map>

#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {
namespace {

struct Recorder : SchedulerObserver {
  void on_prefix_lookup(std::uint32_t) override {}
  void on_waited(const Ticket& ticket, const WaitTimes& waited) override {
    waits[ticket.id] = waited;
  }
  void on_shed(const Ticket& ticket, ShedReason reason) override { shed[ticket.id] = reason; }
  std::map<std::uint64_t, WaitTimes> waits;
  std::map<std::uint64_t, ShedReason> shed;
};

class SchedulerTrafficTest : public ::testing::Test {
 protected:
  void make(TrafficOptions traffic, std::size_t capacity = 64, std::uint32_t running = 1) {
    SchedulerOptions options;
    options.traffic = std::move(traffic);
    options.queue_capacity = capacity;
    options.queue_timeout = 30s;
    options.node_limits = NodeLoad{1'000'000, running};  // default: one request at a time
    options.prefix.enabled = false;
    options.observer = &recorder;
    auto policy = sched::make_placement_policy("least-outstanding");
    ASSERT_TRUE(policy.ok());
    scheduler = std::make_unique<Scheduler>(clock, options, std::move(*policy));
    scheduler->set_nodes({{"p0", Role::kPrefill, ""}});
  }
  static TrafficOptions two_bands(bool low_sheddable = false) {
    TrafficOptions traffic;
    traffic.bands = {{"high", -1}, {"low", 0}};
    traffic.bands[1].sheddable = low_sheddable;
    traffic.aging = 0s;
    return traffic;
  }
  static Ticket ticket(std::uint64_t id, std::uint8_t band, std::uint32_t tenant = 0,
                       std::uint64_t prompt = 100) {
    Ticket t;
    t.id = id;
    t.role = Role::kPrefill;
    t.prompt_tokens = prompt;
    t.max_tokens = 10;
    t.band = band;
    t.tenant = tenant;
    return t;
  }
  void submit(Ticket t) { ASSERT_TRUE(scheduler->submit(std::move(t)).ok()); }
  // One pass: the placed ticket ids, and the errors by ticket.
  std::vector<std::uint64_t> pass() {
    std::vector<std::uint64_t> placed;
    for (Decision& decision : scheduler->schedule()) {
      decided_waits[decision.ticket] = decision.waited;
      if (decision.lease) {
        placed.push_back(decision.ticket);
        leases.push_back(*decision.lease);
      } else {
        errors[decision.ticket] = decision.lease.error();
      }
    }
    return placed;
  }
  // Releases the oldest lease and returns what the next pass placed.
  std::vector<std::uint64_t> release_one() {
    scheduler->release(leases.front(), Outcome::kSuccess);
    leases.erase(leases.begin());
    return pass();
  }

  ManualClock clock;
  Recorder recorder;
  std::unique_ptr<Scheduler> scheduler;
  std::vector<Lease> leases;
  std::map<std::uint64_t, Error> errors;
  std::map<std::uint64_t, WaitTimes> decided_waits;  // Decision::waited
};

using Ids = std::vector<std::uint64_t>;

TEST_F(SchedulerTrafficTest, AnUrgentBandGoesFirstWhateverItsArrival) {
  make(two_bands());
  submit(ticket(1, 1));
  EXPECT_EQ(pass(), Ids{1});
  submit(ticket(2, 1));
  submit(ticket(3, 1));
  submit(ticket(4, 0));
  EXPECT_TRUE(pass().empty());
  EXPECT_EQ(release_one(), Ids{4});
  EXPECT_EQ(release_one(), Ids{2});
  EXPECT_EQ(release_one(), Ids{3});
}

TEST_F(SchedulerTrafficTest, AgingLiftsAWaitingTicketOneBandPerStep) {
  TrafficOptions traffic = two_bands();
  traffic.aging = 5s;
  make(traffic);
  submit(ticket(1, 1));
  EXPECT_EQ(pass(), Ids{1});
  submit(ticket(2, 1));  // low, waits from t=0
  clock.advance(6s);
  submit(ticket(3, 0));  // high, but newer than the aged low ticket
  EXPECT_TRUE(pass().empty());
  EXPECT_EQ(release_one(), Ids{2}) << "after 5 s the low ticket is in the high band, and older";
  EXPECT_EQ(release_one(), Ids{3});
}

TEST_F(SchedulerTrafficTest, AFullQueueShedsTheNewestSheddableTicketForAnUrgentOne) {
  make(two_bands(/*low_sheddable=*/true), /*capacity=*/2);
  submit(ticket(1, 1));
  EXPECT_EQ(pass(), Ids{1});
  submit(ticket(2, 1));
  submit(ticket(3, 1));
  const Status low = scheduler->submit(ticket(4, 1));
  ASSERT_FALSE(low.ok()) << "a low ticket cannot evict its own band";
  EXPECT_EQ(low.error().code, ErrorCode::kResourceExhausted);
  submit(ticket(5, 0));
  EXPECT_TRUE(pass().empty());
  ASSERT_TRUE(errors.contains(3)) << "the newest low ticket gave its place up";
  EXPECT_EQ(errors[3].code, ErrorCode::kResourceExhausted);
  EXPECT_NE(errors[3].message.find("shed"), std::string::npos);
  EXPECT_EQ(recorder.shed.at(3), ShedReason::kEvicted);
  EXPECT_EQ(release_one(), Ids{5});
  EXPECT_EQ(release_one(), Ids{2});
  // A queue full of urgent tickets evicts nothing.
  submit(ticket(6, 0));
  submit(ticket(7, 0));
  EXPECT_FALSE(scheduler->submit(ticket(8, 0)).ok());
}

TEST_F(SchedulerTrafficTest, ASheddableBandHasItsOwnBoundAndTimeout) {
  TrafficOptions traffic = two_bands(/*low_sheddable=*/true);
  traffic.bands[1].max_waiting = 1;
  traffic.bands[1].queue_timeout = 2s;
  make(traffic);
  submit(ticket(1, 0));
  EXPECT_EQ(pass(), Ids{1});
  submit(ticket(2, 1));
  const Status second = scheduler->submit(ticket(3, 1));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("band 'low' is shedding"), std::string::npos);
  EXPECT_EQ(recorder.shed.at(3), ShedReason::kBandFull);
  submit(ticket(4, 0));  // the urgent band has no bound of its own
  EXPECT_EQ(scheduler->next_deadline(), clock.now() + 2s) << "the band's timeout wakes the core";
  clock.advance(2s);
  EXPECT_TRUE(pass().empty());
  EXPECT_EQ(errors.at(2).code, ErrorCode::kResourceExhausted) << "shed: retry later, not 503";
  EXPECT_EQ(recorder.shed.at(2), ShedReason::kBandTimeout);
  EXPECT_FALSE(errors.contains(4)) << "the urgent one waits for the global queue timeout";
  submit(ticket(5, 1));  // the band has room again
  clock.advance(28s);
  pass();
  EXPECT_EQ(errors.at(4).code, ErrorCode::kTimeout);
}

TEST_F(SchedulerTrafficTest, EveryWaitIsSplitByItsCause) {
  make(two_bands());
  submit(ticket(1, 0));
  EXPECT_EQ(pass(), Ids{1});
  submit(ticket(2, 0));  // waits: no capacity
  submit(ticket(3, 1));  // waits: behind the urgent one that cannot go
  pass();
  clock.advance(2s);
  EXPECT_EQ(release_one(), Ids{2});
  clock.advance(1s);
  EXPECT_EQ(release_one(), Ids{3});
  const auto cause = [](WaitCause c) { return static_cast<std::size_t>(c); };
  EXPECT_EQ(recorder.waits.at(2)[cause(WaitCause::kNoCapacity)], 2s);
  EXPECT_EQ(recorder.waits.at(2)[cause(WaitCause::kPriority)], 0s);
  EXPECT_EQ(recorder.waits.at(3)[cause(WaitCause::kPriority)], 2s);
  EXPECT_EQ(recorder.waits.at(3)[cause(WaitCause::kNoCapacity)], 1s)
      << "alone after the urgent one left, it waited for capacity";
  EXPECT_EQ(recorder.waits.at(1)[cause(WaitCause::kNoCapacity)], 0s);
  EXPECT_EQ(decided_waits.at(3), recorder.waits.at(3)) << "the decision carries its receipt";
  EXPECT_EQ(decided_waits.at(2), recorder.waits.at(2));
}

TEST_F(SchedulerTrafficTest, TenantsShareABandFairlyWhateverTheirBacklog) {
  make(TrafficOptions{});
  submit(ticket(1, 0, 7));
  EXPECT_EQ(pass(), Ids{1});
  for (std::uint64_t id = 10; id < 14; ++id) submit(ticket(id, 0, 7));  // the big tenant
  for (std::uint64_t id = 20; id < 22; ++id) submit(ticket(id, 0, 8));  // a small one, later
  pass();
  Ids order;
  for (int i = 0; i < 6; ++i) {
    for (std::uint64_t id : release_one()) order.push_back(id);
  }
  EXPECT_EQ(order, (Ids{20, 10, 21, 11, 12, 13}))
      << "tenant 7 already had one placed: the small tenant goes first, then they alternate";
}

TEST_F(SchedulerTrafficTest, ANodeShareLeavesHeadroomForTheUrgentBand) {
  TrafficOptions traffic = two_bands();
  traffic.bands[1].node_share = 0.5;
  make(traffic, 64, /*running=*/4);
  for (std::uint64_t id = 1; id <= 4; ++id) submit(ticket(id, 1));
  EXPECT_EQ(pass(), (Ids{1, 2})) << "the low band may fill half of the node";
  submit(ticket(5, 0));
  EXPECT_EQ(pass(), Ids{5}) << "the urgent one goes at once: no wait for a slot";
  submit(ticket(6, 0));
  EXPECT_EQ(pass(), Ids{6}) << "the low tickets waiting before it do not block it";
  EXPECT_TRUE(release_one().empty()) << "three running: over the low band's half";
  EXPECT_TRUE(release_one().empty()) << "two running: at the low band's half";
  EXPECT_EQ(release_one(), Ids{3}) << "below half again: the low band goes on";
}

TEST_F(SchedulerTrafficTest, ATenantsNodeShareLeavesHeadroomForTheOthers) {
  make(TrafficOptions{}, 64, /*running=*/4);
  for (std::uint64_t id = 1; id <= 4; ++id) {
    Ticket t = ticket(id, 0, 7);
    t.tenant_node_share = 0.5;
    submit(std::move(t));
  }
  EXPECT_EQ(pass(), (Ids{1, 2})) << "tenant 7 may fill half of the node";
  submit(ticket(20, 0, 8));
  EXPECT_EQ(pass(), Ids{20}) << "another tenant finds room at once";
}

TEST_F(SchedulerTrafficTest, AFullQueueDropsFromTheTenantOverItsShare) {
  make(TrafficOptions{}, /*capacity=*/4);
  submit(ticket(1, 0, 7));
  EXPECT_EQ(pass(), Ids{1});
  for (std::uint64_t id = 10; id < 14; ++id) submit(ticket(id, 0, 7));  // the queue is full
  submit(ticket(20, 0, 8));  // tenant 8 holds none of it: tenant 7's newest makes room
  EXPECT_TRUE(pass().empty());
  ASSERT_TRUE(errors.contains(13));
  EXPECT_EQ(errors.at(13).code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(recorder.shed.at(13), ShedReason::kQueueShare);
  submit(ticket(21, 0, 8));  // 2 against 2 (tenant 7 holds 3): still over its share
  EXPECT_TRUE(pass().empty());
  EXPECT_TRUE(errors.contains(12));
  const Status third = scheduler->submit(ticket(22, 0, 8));  // 3 against 2: not any more
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code, ErrorCode::kResourceExhausted);
  const Status again = scheduler->submit(ticket(14, 0, 7));
  EXPECT_FALSE(again.ok()) << "tenant 7 cannot take its place back";
}

TEST_F(SchedulerTrafficTest, WithoutClassesThePolicysOrderIsUnchanged) {
  make(TrafficOptions{});
  submit(ticket(1, 0));
  EXPECT_EQ(pass(), Ids{1});
  submit(ticket(2, 0));
  submit(ticket(3, 0));
  pass();
  EXPECT_EQ(release_one(), Ids{2});
  EXPECT_EQ(release_one(), Ids{3});
}

}  // namespace
}  // namespace omni::proxy
