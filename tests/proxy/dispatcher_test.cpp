// The master/worker wiring: the lock-free hand-over queue and the combining Dispatcher.
#include "dispatcher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <set>
#include <thread>

namespace omni::proxy {
namespace {

TEST(ProxyBoundedQueue, RefusesWhenFullAndKeepsOrder) {
  detail::BoundedQueue<int> queue(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(queue.try_push(i));
  EXPECT_FALSE(queue.try_push(99));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(queue.try_pop(), i);
  EXPECT_FALSE(queue.try_pop().has_value());
}

TEST(ProxyBoundedQueue, ManyProducersLoseNothing) {
  detail::BoundedQueue<int> queue(1024);
  constexpr int kPerThread = 20000;
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&queue, t] {
      for (int i = 0; i < kPerThread; ++i) {
        while (!queue.try_push(t * kPerThread + i)) std::this_thread::yield();
      }
    });
  }
  std::set<int> seen;
  while (seen.size() < 4u * kPerThread) {
    if (auto v = queue.try_pop()) {
      EXPECT_TRUE(seen.insert(*v).second);
    }
  }
  for (auto& p : producers) p.join();
  EXPECT_EQ(*seen.rbegin(), 4 * kPerThread - 1);
}

Ticket decode_ticket(std::uint64_t id) {
  Ticket ticket;
  ticket.id = id;
  ticket.role = Role::kDecode;
  ticket.prompt_tokens = 5;
  ticket.max_tokens = 5;
  return ticket;
}

std::unique_ptr<sched::PlacementPolicy> least_outstanding() {
  auto policy = sched::make_placement_policy("least-outstanding");
  EXPECT_TRUE(policy.ok());
  return std::move(*policy);
}

TEST(ProxyDispatcher, IdleSubmitIsDecidedOnTheCallingThreadBeforeSubmitReturns) {
  SteadyClock clock;
  Dispatcher dispatcher(clock, {}, least_outstanding(), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}});
  dispatcher.start();
  for (std::uint64_t id = 1; id <= 20; ++id) {
    std::optional<Result<Placement>> decided;
    ASSERT_TRUE(
        dispatcher.submit(decode_ticket(id), [&](Result<Placement> r) { decided = std::move(r); })
            .ok());
    // The background thread may hold the master role for a tick at this very moment; then
    // it decides the ticket instead, a few microseconds later.
    for (int i = 0; i < 2000 && !decided; ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    ASSERT_TRUE(decided.has_value());
    ASSERT_TRUE(decided->ok());
    EXPECT_EQ((*decided)->node, "a");
    dispatcher.release((*decided)->lease, Outcome::kSuccess);
  }
  // Without the background thread nobody else can be master: the decision is synchronous.
  dispatcher.stop();
  Dispatcher idle(clock, {}, least_outstanding(), std::chrono::milliseconds(1));
  idle.set_nodes({{"a", Role::kDecode, ""}});
  bool decided = false;
  std::thread::id on;
  ASSERT_TRUE(idle.submit(decode_ticket(1),
                          [&](Result<Placement> r) {
                            decided = r.ok();
                            on = std::this_thread::get_id();
                          })
                  .ok());
  EXPECT_TRUE(decided);
  EXPECT_EQ(on, std::this_thread::get_id());
}

TEST(ProxyDispatcher, ConcurrentSubmittersGetEveryTicketDecidedExactlyOnce) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  // Declared before the dispatcher, so that they outlive it: its thread may still be delivering
  // when an assertion below fails and the test returns early.
  std::vector<std::atomic<int>> calls(kThreads * kPerThread + 1);
  std::atomic<int> decided{0};
  std::atomic<int> failed{0};
  SteadyClock clock;
  SchedulerOptions options;
  options.queue_capacity = 100000;
  options.node_limits = {1'000'000, 3};  // most tickets wait: combiners decide others' tickets
  Dispatcher dispatcher(clock, options, least_outstanding(), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}, {"b", Role::kDecode, ""}});
  dispatcher.start();
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const auto id = static_cast<std::uint64_t>(t * kPerThread + i + 1);
        // The callback releases at once, from inside the master context: the freed slot goes
        // to a waiting ticket in the same combining loop.
        const Status status = dispatcher.submit(decode_ticket(id), [&, id](Result<Placement> r) {
          calls[id].fetch_add(1);
          if (r.ok()) {
            dispatcher.release(r->lease, Outcome::kSuccess);
          } else {
            failed.fetch_add(1);
          }
          decided.fetch_add(1);
        });
        ASSERT_TRUE(status.ok());
      }
    });
  }
  for (auto& w : workers) w.join();
  // Bounded, but generous: under ASan on a loaded 2-core machine the passes over thousands of
  // waiting tickets take seconds. Progress is what is checked, not speed.
  for (int i = 0; i < 120'000 && decided.load() < kThreads * kPerThread; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(decided.load(), kThreads * kPerThread);
  EXPECT_EQ(failed.load(), 0);
  for (std::size_t id = 1; id < calls.size(); ++id)
    ASSERT_EQ(calls[id].load(), 1) << "ticket " << id;
  dispatcher.stop();
}

TEST(ProxyDispatcher, StopCancelsEveryWaitingTicketOnceAndRefusesLaterOnes) {
  std::vector<int> calls(11, 0);  // outlive the dispatcher, whose destructor cancels
  std::vector<ErrorCode> codes(11, ErrorCode::kInvalidArgument);
  std::mutex mu;
  SteadyClock clock;
  SchedulerOptions options;
  options.node_limits = {1'000'000, 1};
  Dispatcher dispatcher(clock, options, least_outstanding(), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}});
  dispatcher.start();
  for (std::uint64_t id = 1; id <= 10; ++id) {
    ASSERT_TRUE(dispatcher
                    .submit(decode_ticket(id),
                            [&, id](Result<Placement> r) {
                              std::lock_guard lock(mu);
                              calls[id]++;
                              if (!r.ok()) codes[id] = r.error().code;
                            })
                    .ok());
  }
  dispatcher.stop();
  std::lock_guard lock(mu);
  EXPECT_EQ(calls[1], 1);  // placed at once (and never released)
  for (std::uint64_t id = 2; id <= 10; ++id) {
    EXPECT_EQ(calls[id], 1) << id;
    EXPECT_EQ(codes[id], ErrorCode::kCancelled) << id;
  }
  bool called = false;
  EXPECT_FALSE(
      dispatcher.submit(decode_ticket(11), [&](Result<Placement>) { called = true; }).ok());
  EXPECT_FALSE(called);
}

TEST(ProxyDispatcher, TicksExpireWaitingTicketsWithoutAnySubmitter) {
  SteadyClock clock;
  SchedulerOptions options;
  options.node_limits = {1'000'000, 1};
  options.queue_timeout = std::chrono::milliseconds(20);
  Dispatcher dispatcher(clock, options, least_outstanding(), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}});
  dispatcher.start();
  std::promise<Result<Placement>> first;
  std::promise<Result<Placement>> second;
  ASSERT_TRUE(
      dispatcher
          .submit(decode_ticket(1), [&](Result<Placement> r) { first.set_value(std::move(r)); })
          .ok());
  ASSERT_TRUE(first.get_future().get().ok());
  ASSERT_TRUE(
      dispatcher
          .submit(decode_ticket(2), [&](Result<Placement> r) { second.set_value(std::move(r)); })
          .ok());
  auto waited = second.get_future();
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto result = waited.get();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kTimeout);
  dispatcher.stop();
}

TEST(ProxyDispatcher, PostRunsInTheMasterContextBeforeLaterDecisions) {
  SteadyClock clock;
  Dispatcher dispatcher(clock, {}, least_outstanding(), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}, {"b", Role::kDecode, ""}});
  dispatcher.start();
  std::atomic<bool> ran{false};
  ASSERT_TRUE(dispatcher.post([&](Scheduler& scheduler) {
    ASSERT_TRUE(scheduler.set_draining("a", true).ok());
    ran = true;
  }));
  std::promise<Result<Placement>> placed;
  ASSERT_TRUE(
      dispatcher
          .submit(decode_ticket(1), [&](Result<Placement> r) { placed.set_value(std::move(r)); })
          .ok());
  auto result = placed.get_future().get();
  EXPECT_TRUE(ran.load());
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->node, "b");  // the drain posted first is seen by the decision
  // The reload / drain / post path publishes at once.
  const auto snapshot = dispatcher.snapshot();
  ASSERT_EQ(snapshot.nodes.size(), 2u);
  EXPECT_TRUE(snapshot.nodes[0].draining);
  dispatcher.stop();
}

TEST(ProxyDispatcher, DecidesFromOneViewWhateverThreadSubmits) {
  SteadyClock clock;
  auto policy = sched::make_placement_policy("least-outstanding");
  ASSERT_TRUE(policy.ok());
  Dispatcher dispatcher(clock, {}, std::move(*policy), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}, {"b", Role::kDecode, ""}});
  dispatcher.start();
  // Four threads each place 50 tickets of 10 tokens and keep them: a single consistent
  // view must split them exactly evenly (least outstanding tokens, ties by id).
  std::vector<std::thread> workers;
  std::mutex mu;
  std::vector<Placement> placements;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::promise<Result<Placement>> done;
        auto result = done.get_future();
        Ticket ticket;
        ticket.id = static_cast<std::uint64_t>(t * 1000 + i + 1);
        ticket.role = Role::kDecode;
        ticket.prompt_tokens = 5;
        ticket.max_tokens = 5;
        ASSERT_TRUE(
            dispatcher
                .submit(ticket, [&done](Result<Placement> r) { done.set_value(std::move(r)); })
                .ok());
        auto placement = result.get();
        ASSERT_TRUE(placement.ok());
        std::lock_guard lock(mu);
        placements.push_back(*placement);
      }
    });
  }
  for (auto& w : workers) w.join();
  ASSERT_EQ(placements.size(), 200u);
  int on_a = 0;
  for (const auto& p : placements) on_a += p.node == "a" ? 1 : 0;
  EXPECT_EQ(on_a, 100);
  for (const auto& p : placements) dispatcher.release(p.lease, Outcome::kSuccess);
  // Releases are applied in order on the scheduler thread; wait for the snapshot to show them.
  for (int i = 0; i < 2000; ++i) {
    const auto snapshot = dispatcher.snapshot();
    if (snapshot.nodes.size() == 2 && snapshot.nodes[0].load.running == 0 &&
        snapshot.nodes[1].load.running == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto snapshot = dispatcher.snapshot();
  EXPECT_EQ(snapshot.nodes[0].load.outstanding_tokens, 0u);
  EXPECT_EQ(snapshot.nodes[1].load.running, 0u);
  EXPECT_TRUE(snapshot.decode_usable);
  EXPECT_FALSE(snapshot.prefill_usable);
  dispatcher.stop();
}

TEST(ProxyDispatcher, StopCancelsUndecidedTickets) {
  SteadyClock clock;
  auto policy = sched::make_placement_policy("least-outstanding");
  ASSERT_TRUE(policy.ok());
  SchedulerOptions options;
  options.node_limits = {1, 1};
  Dispatcher dispatcher(clock, options, std::move(*policy), std::chrono::milliseconds(1));
  dispatcher.set_nodes({{"a", Role::kDecode, ""}});
  dispatcher.start();
  std::promise<Result<Placement>> first;
  std::promise<Result<Placement>> second;
  Ticket t1;
  t1.id = 1;
  t1.role = Role::kDecode;
  t1.prompt_tokens = 5;
  Ticket t2 = t1;
  t2.id = 2;
  ASSERT_TRUE(
      dispatcher.submit(t1, [&](Result<Placement> r) { first.set_value(std::move(r)); }).ok());
  EXPECT_TRUE(first.get_future().get().ok());
  ASSERT_TRUE(
      dispatcher.submit(t2, [&](Result<Placement> r) { second.set_value(std::move(r)); }).ok());
  dispatcher.stop();
  auto waited = second.get_future().get();
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.error().code, ErrorCode::kCancelled);
}

}  // namespace
}  // namespace omni::proxy
