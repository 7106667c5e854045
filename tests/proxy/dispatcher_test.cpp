// The scheduler thread and its lock-free hand-over queue (the live master/worker wiring).
#include "dispatcher.hpp"

#include <gtest/gtest.h>

#include <future>
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

TEST(ProxyDispatcher, DecidesFromOneViewWhateverThreadSubmits) {
  SteadyClock clock;
  auto policy = make_policy("least-outstanding");
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
        ASSERT_TRUE(dispatcher.submit(ticket, [&done](Result<Placement> r) { done.set_value(std::move(r)); }).ok());
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
  auto policy = make_policy("least-outstanding");
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
  ASSERT_TRUE(dispatcher.submit(t1, [&](Result<Placement> r) { first.set_value(std::move(r)); }).ok());
  EXPECT_TRUE(first.get_future().get().ok());
  ASSERT_TRUE(dispatcher.submit(t2, [&](Result<Placement> r) { second.set_value(std::move(r)); }).ok());
  dispatcher.stop();
  auto waited = second.get_future().get();
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.error().code, ErrorCode::kCancelled);
}

}  // namespace
}  // namespace omni::proxy
