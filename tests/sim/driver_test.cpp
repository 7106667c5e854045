// The engine driver against the real engine model on a fast clock: requests run to their
// length, progress reaches the handler side, PD held KV is pulled once, leases expire.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <variant>

#include "sim/driver.hpp"
#include "sim/sim_config.hpp"

namespace omni::sim {
namespace {

using namespace std::chrono_literals;

engine::Engine small_engine(bool events = false) {
  SimConfig cfg;
  cfg.num_gpu_blocks_override = 512;
  cfg.max_model_len = 4096;
  auto setup = engine_setup(cfg, events);
  EXPECT_TRUE(setup) << setup.error().message;
  return engine::Engine(setup->config,
                        engine::CostModel(setup->model, setup->hardware, setup->layout, setup->mtp),
                        1);
}

// Waits on the channel from a coroutine, as a handler does, until the request is done.
RequestProgress run_to_end(boost::asio::io_context& io, std::shared_ptr<RequestChannel> channel,
                           std::vector<std::uint32_t>* seen = nullptr) {
  RequestProgress last;
  boost::asio::co_spawn(
      io,
      [&]() -> Task<void> {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        for (;;) {
          auto p = co_await channel->wait(last.output_tokens, deadline);
          if (!p) co_return;
          last = *p;
          if (seen) seen->push_back(p->output_tokens);
          if (p->done()) co_return;
        }
      },
      boost::asio::detached);
  io.run_for(15s);
  io.restart();
  return last;
}

Submission request(std::uint32_t prompt, std::uint32_t max_tokens) {
  Submission s;
  s.spec.prompt_tokens = prompt;
  s.spec.max_output_tokens = max_tokens;
  s.max_tokens_param = max_tokens;
  return s;
}

TEST(EngineDriver, RunsARequestToItsLengthAndReportsEveryStep) {
  SteadyClock clock(1e5);
  DriverOptions options;
  options.speed = 1e5;
  boost::asio::io_context io;  // outlives the driver, which may still hold channels
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(request(100, 8), io.get_executor());
  ASSERT_TRUE(channel);
  std::vector<std::uint32_t> seen;
  RequestProgress p = run_to_end(io, *channel, &seen);
  EXPECT_EQ(p.finish, engine::FinishReason::kLength);
  EXPECT_EQ(p.output_tokens, 8u);
  EXPECT_FALSE(p.error);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 8u);
}

TEST(EngineDriver, InvalidRequestFailsWith400) {
  SteadyClock clock(1e5);
  DriverOptions options;
  options.speed = 1e5;
  boost::asio::io_context io;  // outlives the driver, which may still hold channels
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(request(5000, 8), io.get_executor());  // over max_model_len
  ASSERT_TRUE(channel);
  RequestProgress p = run_to_end(io, *channel);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error_status, 400);
}

Submission prefill_only(const std::string& key) {
  Submission s = request(64, 1);
  s.spec.prefill_only = true;
  s.held_key = key;
  return s;
}

TEST(EngineDriver, HeldPrefillKvIsPulledOnce) {
  SteadyClock clock(100);
  DriverOptions options;
  options.speed = 100;
  options.kv_lease_seconds = 1e6;  // never expires within the test
  boost::asio::io_context io;      // outlives the driver, which may still hold channels
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(prefill_only("cmpl-a-0"), io.get_executor());
  ASSERT_TRUE(channel);
  RequestProgress p = run_to_end(io, *channel);
  EXPECT_EQ(p.finish, engine::FinishReason::kPrefillDone);
  EXPECT_EQ(p.output_tokens, 1u);
  auto held = driver.release_held("cmpl-a-0");
  ASSERT_TRUE(held);
  EXPECT_EQ(held->prompt_tokens, 64u);
  EXPECT_FALSE(driver.release_held("cmpl-a-0"));  // already pulled
  EXPECT_FALSE(driver.release_held("cmpl-unknown-0"));
}

TEST(EngineDriver, HeldPrefillKvLeaseExpiresInModelTime) {
  SteadyClock clock(1e4);
  DriverOptions options;
  options.speed = 1e4;
  options.kv_lease_seconds = 1.0;  // 0.1 ms of wall time
  boost::asio::io_context io;      // outlives the driver, which may still hold channels
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(prefill_only("cmpl-b-0"), io.get_executor());
  ASSERT_TRUE(channel);
  EXPECT_EQ(run_to_end(io, *channel).finish, engine::FinishReason::kPrefillDone);
  // The driver expires leases between steps and at least every 20 ms of wall time.
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(driver.release_held("cmpl-b-0"));
}

// Polls `done` (the driver thread applies commands asynchronously); false after 5 s.
template <class F>
bool eventually(F done) {
  for (int k = 0; k < 5000; ++k) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

TEST(EngineDriver, ASecondHoldUnderALiveKeyIsRefusedAndNothingLeaks) {
  SteadyClock clock(100);
  DriverOptions options;
  options.speed = 100;
  options.kv_lease_seconds = 1e6;
  boost::asio::io_context io;
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto first = driver.submit(prefill_only("cmpl-dup-0"), io.get_executor());
  ASSERT_TRUE(first);
  // While the first prefill runs, and after it holds its KV: the key is taken.
  auto while_running = driver.submit(prefill_only("cmpl-dup-0"), io.get_executor());
  ASSERT_FALSE(while_running);
  EXPECT_EQ(while_running.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(run_to_end(io, *first).finish, engine::FinishReason::kPrefillDone);
  EXPECT_FALSE(driver.submit(prefill_only("cmpl-dup-0"), io.get_executor()));
  ASSERT_TRUE(eventually([&] { return driver.gauges().held == 1; }));
  const double held_usage = driver.gauges().kv_cache_usage;
  EXPECT_GT(held_usage, 0.0);
  auto held = driver.release_held("cmpl-dup-0");
  ASSERT_TRUE(held);
  EXPECT_EQ(held->prompt_tokens, 64u);  // the first request's KV, intact
  EXPECT_TRUE(
      eventually([&] { return driver.gauges().kv_cache_usage == 0 && driver.gauges().held == 0; }));
  // Pulled: the key is free again.
  EXPECT_TRUE(driver.submit(prefill_only("cmpl-dup-0"), io.get_executor()));
}

TEST(EngineDriver, AbortFreesAHoldAndTheGaugesFollowOnAnIdleEngine) {
  SteadyClock clock(100);
  DriverOptions options;
  options.speed = 100;
  options.kv_lease_seconds = 1e6;
  boost::asio::io_context io;
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(prefill_only("cmpl-c-0"), io.get_executor());
  ASSERT_TRUE(channel);
  EXPECT_EQ(run_to_end(io, *channel).finish, engine::FinishReason::kPrefillDone);
  // The gauges were published before the handler heard of the finish.
  EXPECT_EQ(driver.gauges().held, 1);
  EXPECT_GT(driver.gauges().kv_cache_usage, 0.0);
  driver.abort((*channel)->id);  // the client went away before reading the params
  EXPECT_TRUE(
      eventually([&] { return driver.gauges().kv_cache_usage == 0 && driver.gauges().held == 0; }));
  EXPECT_FALSE(driver.release_held("cmpl-c-0"));
}

TEST(EngineDriver, AbortedRunningRequestsLeaveNothingRunning) {
  SteadyClock clock(1.0);  // real time: the request is still running when aborted
  DriverOptions options;
  boost::asio::io_context io;
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(request(1000, 3000), io.get_executor());
  ASSERT_TRUE(channel);
  ASSERT_TRUE(eventually([&] { return driver.gauges().running == 1; }));
  driver.abort((*channel)->id);
  EXPECT_EQ(run_to_end(io, *channel).finish, engine::FinishReason::kAbort);
  EXPECT_TRUE(eventually([&] {
    const EngineGauges g = driver.gauges();
    return g.running == 0 && g.waiting == 0 && g.kv_cache_usage == 0;
  }));
}

TEST(EngineDriver, AbortWhileWaitingForATransferWakesTheHandler) {
  SteadyClock clock(1.0);
  DriverOptions options;
  boost::asio::io_context io;
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  Submission s = request(64, 4);
  s.spec.kv_preloaded = true;
  s.transfer_seconds = 3600;
  auto channel = driver.submit(std::move(s), io.get_executor());
  ASSERT_TRUE(channel);
  driver.abort((*channel)->id);
  EXPECT_EQ(run_to_end(io, *channel).finish, engine::FinishReason::kAbort);
  EXPECT_TRUE(eventually([&] { return driver.gauges().waiting == 0; }));
}

TEST(EngineDriver, LeaseExpiryFreesTheBlocks) {
  SteadyClock clock(1e4);
  DriverOptions options;
  options.speed = 1e4;
  options.kv_lease_seconds = 1.0;
  boost::asio::io_context io;
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(prefill_only("cmpl-e-0"), io.get_executor());
  ASSERT_TRUE(channel);
  EXPECT_EQ(run_to_end(io, *channel).finish, engine::FinishReason::kPrefillDone);
  EXPECT_TRUE(
      eventually([&] { return driver.gauges().kv_cache_usage == 0 && driver.gauges().held == 0; }));
}

TEST(EngineDriver, ResetPrefixCacheOnlyWhenNothingIsInUse) {
  SteadyClock clock(100);
  DriverOptions options;
  options.speed = 100;
  options.kv_lease_seconds = 1e6;
  boost::asio::io_context io;
  std::atomic<int> cleared{0};
  EngineDriver driver(small_engine(true), clock, options, nullptr,
                      [&](std::vector<kvcache::KVEvent> events) {
                        for (const auto& e : events)
                          cleared += std::holds_alternative<kvcache::AllBlocksCleared>(e) ? 1 : 0;
                      });
  driver.start();
  auto channel = driver.submit(prefill_only("cmpl-r-0"), io.get_executor());
  ASSERT_TRUE(channel);
  run_to_end(io, *channel);
  EXPECT_FALSE(driver.reset_prefix_cache().get());  // blocks held for a decode
  ASSERT_TRUE(driver.release_held("cmpl-r-0"));
  EXPECT_TRUE(driver.reset_prefix_cache().get());
  // AllBlocksCleared reaches subscribers at once, though no step follows on the idle engine.
  EXPECT_TRUE(eventually([&] { return cleared.load() == 1; }));
}

TEST(EngineDriver, StopFailsWhatIsInFlight) {
  SteadyClock clock(1.0);  // real time: a long request cannot finish before stop()
  DriverOptions options;
  boost::asio::io_context io;  // outlives the driver, which may still hold channels
  EngineDriver driver(small_engine(), clock, options, nullptr, nullptr);
  driver.start();
  auto channel = driver.submit(request(1000, 3000), io.get_executor());
  ASSERT_TRUE(channel);
  driver.stop();
  RequestProgress p = run_to_end(io, *channel);
  ASSERT_TRUE(p.error);
  EXPECT_FALSE(driver.submit(request(10, 1), io.get_executor()));
}

}  // namespace
}  // namespace omni::sim
