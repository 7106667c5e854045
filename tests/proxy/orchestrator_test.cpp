// The PD orchestrator in-process: the gateway's request path (handle_generate: the three PD
// modes, retries, leg deadlines, client departures) over scripted fake engines and a fake
// client, no socket anywhere. Each test asserts the exact sequence of engine calls and what each
// node's health learned.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <future>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "call.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// What one engine call does.
struct Act {
  // kBreakAfter: the connection breaks after `pieces` events; kErrorEventAfter: the engine
  // sends vLLM's in-stream error event and [DONE] after them.
  enum Kind {
    kAnswer,
    kStatus,
    kRefuseConnection,
    kHang,
    kStallAfter,
    kBreakAfter,
    kErrorEventAfter,
    kSlow  // kAnswer with 10 ms between events
  } kind = kAnswer;
  int status = 200;
  int pieces = 3;  // streamed events before the end (kStallAfter: before the stall)
  std::string message = "engine says no";  // kStatus: the error's message
};

struct CallRecord {
  std::string node;
  bool prefill = false;  // carried do_remote_decode
  bool aborted = false;
  std::string body;
};

// Every node's script (acts in order; the last one repeats) and the log of calls.
class FakeEngines final : public EngineClient {
 public:
  std::map<std::string, std::deque<Act>> script;
  std::vector<CallRecord> calls;
  std::vector<std::string> ids;  // each call's X-Request-Id

  Task<Result<http::Response>> send(const NodeEntry& node, http::Request request,
                                    http::Abort* abort) override {
    const std::size_t index = record(node, request);
    const Act act = next_act(node.spec.name);
    if (act.kind == Act::kRefuseConnection)
      co_return make_error(ErrorCode::kUnavailable, "refused");
    if (act.kind == Act::kHang) co_return co_await hang(index, abort);
    http::Response response;
    response.status = act.kind == Act::kStatus ? act.status : 200;
    response.headers.add("Content-Type", "application/json");
    if (response.status != 200) {
      response.body = R"({"error":{"message":")" + act.message + R"(","code":)" +
                      std::to_string(act.status) + "}}";
    } else if (calls[index].prefill) {
      response.body = R"({"choices":[{"text":"x"}],"kv_transfer_params":{"remote_engine_id":")" +
                      node.spec.name + R"(","remote_block_ids":[[1]]}})";
    } else {
      response.body = R"({"choices":[{"text":" done","finish_reason":"length"}]})";
    }
    co_return response;
  }

  Task<Result<std::unique_ptr<http::ResponseStream>>> open(const NodeEntry& node,
                                                           http::Request request,
                                                           http::Abort* abort) override {
    const std::size_t index = record(node, request);
    const Act act = next_act(node.spec.name);
    if (act.kind == Act::kRefuseConnection)
      co_return make_error(ErrorCode::kUnavailable, "refused");
    if (act.kind == Act::kHang) co_return co_await hang(index, abort);
    co_return std::unique_ptr<http::ResponseStream>(
        new Stream(*this, index, act, abort, co_await asio::this_coro::executor));
  }

  std::vector<std::string> nodes_called() const {
    std::vector<std::string> out;
    for (const CallRecord& c : calls) out.push_back(c.node);
    return out;
  }

 private:
  class Stream final : public http::ResponseStream {
   public:
    Stream(FakeEngines& owner, std::size_t index, Act act, http::Abort* abort,
           asio::any_io_executor executor)
        : owner_(owner), index_(index), act_(act), abort_(abort), executor_(std::move(executor)) {
      headers_.add("Content-Type", "text/event-stream");
    }
    int status() const noexcept override { return act_.kind == Act::kStatus ? act_.status : 200; }
    const http::Headers& headers() const noexcept override { return headers_; }
    Task<Result<std::optional<std::string>>> next() override {
      if (act_.kind == Act::kStatus) {
        if (sent_++ > 0) co_return std::optional<std::string>();
        co_return std::optional<std::string>(R"({"error":{"message":")" + act_.message + R"("}})");
      }
      if (sent_ < act_.pieces) {
        if (act_.kind == Act::kSlow && sent_ > 0) {
          asio::steady_timer gap(executor_, 10ms);
          (void)co_await gap.async_wait(kAsTuple);
        }
        ++sent_;
        const bool last =
            sent_ == act_.pieces && (act_.kind == Act::kAnswer || act_.kind == Act::kSlow);
        co_return std::optional<std::string>(
            "data: {\"id\":\"cmpl-" + owner_.calls[index_].node +
            "\",\"choices\":[{\"index\":0,\"text\":\"t\",\"finish_reason\":" +
            (last ? "\"length\"" : "null") + "}]}\n\n");
      }
      if (act_.kind == Act::kBreakAfter) {
        co_return make_error(ErrorCode::kUnavailable, "connection reset by peer");
      }
      if (act_.kind == Act::kErrorEventAfter && !done_) {
        done_ = true;
        co_return std::optional<std::string>(
            "data: {\"error\": {\"message\": \"EngineCore died\", \"code\": 500}}\n\n"
            "data: [DONE]\n\n");
      }
      if (act_.kind == Act::kStallAfter) {
        Error hung = co_await owner_.hang(index_, abort_);
        co_return hung;
      }
      if (!done_) {
        done_ = true;
        co_return std::optional<std::string>("data: [DONE]\n\n");
      }
      co_return std::optional<std::string>();
    }

   private:
    FakeEngines& owner_;
    std::size_t index_;
    Act act_;
    http::Abort* abort_;
    asio::any_io_executor executor_;
    http::Headers headers_;
    int sent_ = 0;
    bool done_ = false;
  };

  std::size_t record(const NodeEntry& node, const http::Request& request) {
    calls.push_back({node.spec.name,
                     request.body.find("\"do_remote_decode\":true") != std::string::npos, false,
                     request.body});
    ids.emplace_back(request.headers.get("X-Request-Id").value_or(""));
    return calls.size() - 1;
  }
  Act next_act(const std::string& node) {
    auto& acts = script[node];
    if (acts.empty()) return Act{};
    const Act act = acts.front();
    if (acts.size() > 1) acts.pop_front();
    return act;
  }
  // Waits until the caller aborts (a deadline, a client gone, the other leg failing).
  Task<Error> hang(std::size_t index, http::Abort* abort) {
    auto executor = co_await asio::this_coro::executor;
    auto timer =
        std::make_shared<asio::steady_timer>(executor, asio::steady_timer::time_point::max());
    if (abort) abort->on_abort([timer] { timer->cancel(); });
    (void)co_await timer->async_wait(kAsTuple);
    if (abort) abort->on_abort({});
    calls[index].aborted = true;
    co_return make_error(ErrorCode::kCancelled, "aborted");
  }
};

// The client: captures what the gateway sends; leave() closes its connection.
class FakeClient final : public http::ResponseWriter {
 public:
  int status = 0;
  std::string body;
  bool streamed = false;
  bool ended = false;

  Task<Status> send(http::Response response) override {
    status = response.status;
    body = std::move(response.body);
    started_ = true;
    ended = true;
    co_return ok_status();
  }
  Task<Status> begin_stream(int s, http::Headers) override {
    status = s;
    streamed = started_ = true;
    co_return ok_status();
  }
  Task<Status> write_chunk(std::string_view data) override {
    body += data;
    co_return ok_status();
  }
  Task<Status> end_stream() override {
    ended = true;
    co_return ok_status();
  }
  bool started() const noexcept override { return started_; }
  bool watch_close(std::function<void()> on_gone) override {
    on_gone_ = std::move(on_gone);
    return true;
  }
  void unwatch_close() override { on_gone_ = nullptr; }
  void leave() {
    if (auto gone = std::exchange(on_gone_, nullptr)) gone();
  }
  bool watching() const { return static_cast<bool>(on_gone_); }

 private:
  bool started_ = false;
  std::function<void()> on_gone_;
};

class Orchestrator : public ::testing::Test {
 protected:
  void start(PdMode mode, std::function<void(ProxyConfig&)> tweak = {}) {
    ProxyConfig config;
    config.pd_mode = mode;
    if (mode != PdMode::kAggregated)
      config.prefill_endpoints = {"127.0.0.1:1001", "127.0.0.1:1002"};
    config.decode_endpoints = {"127.0.0.1:2001", "127.0.0.1:2002"};
    config.health.interval = 0s;
    config.health.failures_to_eject = 5;
    config.hash_seed = "0";
    if (tweak) tweak(config);
    auto made = make_gateway_impl(std::move(config), &clock);
    ASSERT_TRUE(made.ok()) << made.error().message;
    g = std::move(*made);
    g->engine_clients = [this](const asio::any_io_executor&, Role) -> EngineClient& {
      return engines;
    };
    g->dispatcher->start();
  }
  void TearDown() override {
    if (g) g->dispatcher->stop();
  }

  // Serves one request to its end on this thread's io_context; `during` runs once the request
  // is under way (e.g. the client leaving).
  void serve(std::string body, FakeClient& client, std::function<void()> during = {}) {
    http::Request request;
    request.method = http::Method::kPost;
    request.target = "/v1/completions";
    request.body = std::move(body);
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> Task<void> {
          co_await handle_generate(*g, request, client, Api::kCompletions);
          done = true;
        },
        asio::detached);
    if (during) {
      asio::steady_timer timer(io, 30ms);
      timer.async_wait([&](const boost::system::error_code&) { during(); });
      io.run_for(5s);
    } else {
      io.run_for(5s);
    }
    io.restart();
    ASSERT_TRUE(done) << "the request did not finish";
  }

  // What each node's health learned, read in the master context.
  std::map<std::string, NodeStatus> health() {
    std::promise<std::vector<NodeStatus>> got;
    auto future = got.get_future();
    EXPECT_TRUE(g->dispatcher->post([&got](Scheduler& s) { got.set_value(s.nodes()); }));
    std::map<std::string, NodeStatus> out;
    for (NodeStatus& n : future.get()) out[n.spec.name] = std::move(n);
    return out;
  }
  std::string access_outcome() const { return last_outcome; }

  ManualClock clock;
  asio::io_context io;
  FakeEngines engines;
  std::unique_ptr<Gateway::Impl> g;
  std::string last_outcome;
};

using Calls = std::vector<std::string>;
const std::string kP1 = "127.0.0.1:1001", kP2 = "127.0.0.1:1002";
const std::string kD1 = "127.0.0.1:2001", kD2 = "127.0.0.1:2002";

TEST_F(Orchestrator, SequentialPrefill5xxIsRetriedElsewhereAndCountedAgainstItsNode) {
  start(PdMode::kSequential);
  engines.script[kP1] = {Act{Act::kStatus, 503}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 200);
  EXPECT_EQ(engines.nodes_called(), (Calls{kP1, kP2, kD1}));
  auto h = health();
  EXPECT_EQ(h[kP1].failures, 1u);
  EXPECT_EQ(h[kP2].failures, 0u);
  EXPECT_EQ(h[kD1].failures, 0u);
  EXPECT_EQ(h[kP1].load.running, 0u) << "every lease is released";
}

TEST_F(Orchestrator, DecodeFailureBeforeTheFirstByteGoesToTheOtherDecodeNode) {
  start(PdMode::kSequential);
  engines.script[kD1] = {Act{Act::kRefuseConnection}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4,"stream":true})", client);
  EXPECT_EQ(client.status, 200);
  EXPECT_TRUE(client.streamed);
  EXPECT_NE(client.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(engines.nodes_called(), (Calls{kP1, kD1, kD2}));
  auto h = health();
  EXPECT_EQ(h[kD1].failures, 1u);
  EXPECT_EQ(h[kD2].failures, 0u);
  EXPECT_EQ(h[kP1].failures, 0u);
}

TEST_F(Orchestrator, ParallelPrefillFailureCancelsTheDecodeAndRetriesAFreshPair) {
  start(PdMode::kParallel);
  engines.script[kP1] = {Act{Act::kStatus, 503}};
  engines.script[kD1] = {Act{Act::kHang}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 200);
  ASSERT_EQ(engines.calls.size(), 4u);
  // The first pair, in either order, then a pair of fresh nodes.
  EXPECT_EQ((std::set<std::string>{engines.calls[0].node, engines.calls[1].node}),
            (std::set<std::string>{kP1, kD1}));
  EXPECT_EQ((std::set<std::string>{engines.calls[2].node, engines.calls[3].node}),
            (std::set<std::string>{kP2, kD2}));
  for (const CallRecord& c : engines.calls) {
    EXPECT_EQ(c.aborted, c.node == kD1) << c.node << ": only the first decode was cancelled";
  }
  auto h = health();
  EXPECT_EQ(h[kP1].failures, 1u);
  EXPECT_EQ(h[kD1].failures, 0u) << "the cancelled decode is not to blame";
}

TEST_F(Orchestrator, ClientLeavingWhileQueuedCancelsItsTicketAndCallsNoEngine) {
  start(PdMode::kAggregated, [](ProxyConfig& c) {
    c.decode_endpoints = {"127.0.0.1:2001"};
    c.limits.node_max_running = 1;
  });
  engines.script[kD1] = {Act{Act::kHang}};
  FakeClient first;
  FakeClient queued;
  http::Request r1;
  r1.method = http::Method::kPost;
  r1.target = "/v1/completions";
  r1.body = R"({"prompt":"a","max_tokens":4})";
  http::Request r2 = r1;
  int finished = 0;
  asio::co_spawn(
      io,
      [&]() -> Task<void> {
        co_await handle_generate(*g, r1, first, Api::kCompletions);
        ++finished;
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> Task<void> {
        co_await handle_generate(*g, r2, queued, Api::kCompletions);
        ++finished;
      },
      asio::detached);
  asio::steady_timer leave(io, 50ms);
  leave.async_wait([&](const boost::system::error_code&) {
    EXPECT_TRUE(queued.watching()) << "the queued request watches its client";
    queued.leave();
    first.leave();
  });
  io.run_for(5s);
  EXPECT_EQ(finished, 2);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1})) << "the queued request never reached an engine";
  EXPECT_TRUE(engines.calls[0].aborted) << "the first client's engine call was cancelled";
  EXPECT_EQ(queued.status, 0) << "nothing is written to a client that left";
  auto h = health();
  EXPECT_EQ(h[kD1].failures, 0u);
  EXPECT_EQ(h[kD1].load.running, 0u);
  EXPECT_EQ(g->dispatcher->snapshot().waiting, 0u);
}

TEST_F(Orchestrator, PrefillDeadlineRetriesOnTheOtherPrefillNode) {
  start(PdMode::kSequential, [](ProxyConfig& c) { c.timeouts.prefill = 50ms; });
  engines.script[kP1] = {Act{Act::kHang}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 200);
  EXPECT_EQ(engines.nodes_called(), (Calls{kP1, kP2, kD1}));
  EXPECT_TRUE(engines.calls[0].aborted);
  EXPECT_EQ(health()[kP1].failures, 1u);
}

TEST_F(Orchestrator, FirstTokenDeadlineRetriesOnTheOtherDecodeNode) {
  start(PdMode::kSequential, [](ProxyConfig& c) { c.timeouts.first_token = 50ms; });
  engines.script[kD1] = {Act{Act::kHang}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4,"stream":true})", client);
  EXPECT_EQ(client.status, 200);
  EXPECT_EQ(engines.nodes_called(), (Calls{kP1, kD1, kD2}));
  EXPECT_TRUE(engines.calls[1].aborted);
  EXPECT_EQ(health()[kD1].failures, 1u);
}

TEST_F(Orchestrator, DecodeIdleDeadlineEndsTheStreamWithAnErrorEvent) {
  start(PdMode::kAggregated, [](ProxyConfig& c) {
    c.timeouts.decode_idle = 50ms;
    c.migration_max_attempts = 0;  // the stream is not continued elsewhere
  });
  engines.script[kD1] = {Act{Act::kStallAfter, 200, 2}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4,"stream":true})", client);
  EXPECT_EQ(client.status, 200);
  EXPECT_TRUE(client.ended);
  EXPECT_NE(client.body.find("silent for 50 ms"), std::string::npos) << client.body;
  EXPECT_NE(client.body.find("data: [DONE]"), std::string::npos);
  EXPECT_TRUE(engines.calls[0].aborted);
  EXPECT_EQ(health()[kD1].failures, 1u);
}

TEST_F(Orchestrator, TheWholeRequestDeadlineBoundsEveryLeg) {
  start(PdMode::kSequential, [](ProxyConfig& c) {
    c.timeouts.request = 80ms;
    c.retries.prefill_attempts = 2;
  });
  engines.script[kP1] = {Act{Act::kHang}};
  engines.script[kP2] = {Act{Act::kHang}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 502);
  EXPECT_NE(client.body.find("request deadline"), std::string::npos) << client.body;
}

TEST_F(Orchestrator, AnEnginesRefusalOfTheRequestIsRelayedNotRetried) {
  start(PdMode::kAggregated);
  engines.script[kD1] = {Act{Act::kStatus, 501}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4,"n":2})", client);
  EXPECT_EQ(client.status, 501);
  EXPECT_NE(client.body.find("engine says no"), std::string::npos);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1}));
  EXPECT_EQ(health()[kD1].failures, 0u);
}

// ---- mid-stream migration (migration.hpp) ----------------------------------------------------

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

boost::json::object body_of(const CallRecord& call) {
  return boost::json::parse(call.body).as_object();
}

double migrations(Gateway::Impl& g, MigrationCause cause, bool completed) {
  return g.metrics.migrations[static_cast<std::size_t>(cause)][completed ? 0 : 1]->value();
}

// A decode whose connection breaks after two events: another decode continues the request from
// the text already sent, and the client sees one stream (one id, one [DONE], no error).
TEST_F(Orchestrator, ABrokenStreamContinuesOnAnotherDecodeInTheSameClientStream) {
  start(PdMode::kAggregated);
  engines.script[kD1] = {Act{Act::kBreakAfter, 200, 2}};
  engines.script[kD2] = {Act{Act::kAnswer, 200, 3}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":10,"stream":true})", client);
  EXPECT_EQ(client.status, 200);
  EXPECT_TRUE(client.ended);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1, kD2}));
  EXPECT_EQ(count_of(client.body, "\"text\":\"t\""), 5u) << client.body;
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u);
  EXPECT_EQ(client.body.find("error"), std::string::npos) << client.body;
  EXPECT_EQ(count_of(client.body, "cmpl-" + kD2), 0u) << "the first stream's id throughout";
  const boost::json::object continuation = body_of(engines.calls[1]);
  EXPECT_EQ(continuation.at("prompt").as_string(), "hellott");
  EXPECT_EQ(continuation.at("max_tokens").as_int64(), 8);
  EXPECT_NE(engines.ids[0], engines.ids[1]) << "the continuation is a request of its own";
  EXPECT_EQ(migrations(*g, MigrationCause::kConnection, true), 1.0);
  auto h = health();
  EXPECT_EQ(h[kD1].failures, 1u);
  EXPECT_EQ(h[kD2].failures, 0u);
  EXPECT_EQ(h[kD1].load.running + h[kD2].load.running, 0u);
}

TEST_F(Orchestrator, AnEnginesInStreamErrorIsWithheldAndTheRequestContinued) {
  start(PdMode::kAggregated);
  engines.script[kD1] = {Act{Act::kErrorEventAfter, 200, 1}};
  FakeClient client;
  serve(R"({"prompt":"hi","max_tokens":4,"stream":true})", client);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1, kD2}));
  EXPECT_EQ(client.body.find("EngineCore died"), std::string::npos) << client.body;
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u) << client.body;
  EXPECT_EQ(body_of(engines.calls[1]).at("max_tokens").as_int64(), 3);
  EXPECT_EQ(migrations(*g, MigrationCause::kEngineError, true), 1.0);
}

TEST_F(Orchestrator, ASilentDecodeIsContinuedElsewhereAfterItsIdleDeadline) {
  start(PdMode::kAggregated, [](ProxyConfig& c) { c.timeouts.decode_idle = 50ms; });
  engines.script[kD1] = {Act{Act::kStallAfter, 200, 2}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4,"stream":true})", client);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1, kD2}));
  EXPECT_TRUE(engines.calls[0].aborted);
  EXPECT_EQ(client.body.find("silent"), std::string::npos) << client.body;
  EXPECT_EQ(migrations(*g, MigrationCause::kIdle, true), 1.0);
}

TEST_F(Orchestrator, ARequestWhoseContinuationWouldDifferGetsTheErrorEvent) {
  start(PdMode::kAggregated);
  engines.script[kD1] = {Act{Act::kBreakAfter, 200, 2}};
  FakeClient client;
  serve(R"({"prompt":"hi","max_tokens":4,"stream":true,"logprobs":1})", client);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1}));
  EXPECT_NE(client.body.find("connection reset"), std::string::npos) << client.body;
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u);
}

TEST_F(Orchestrator, SequentialPdContinuesWithAFreshPrefillAndAnotherDecode) {
  start(PdMode::kSequential);
  engines.script[kD1] = {Act{Act::kBreakAfter, 200, 2}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":10,"stream":true})", client);
  ASSERT_EQ(engines.calls.size(), 4u) << client.body;
  EXPECT_TRUE(engines.calls[2].prefill);
  EXPECT_EQ(body_of(engines.calls[2]).at("prompt").as_string(), "hellott");
  EXPECT_EQ(engines.calls[3].node, kD2) << "never the decode that broke";
  EXPECT_EQ(count_of(client.body, "\"text\":\"t\""), 5u) << client.body;
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u);
}

TEST_F(Orchestrator, ParallelPdContinuesOnAFreshPair) {
  start(PdMode::kParallel);
  engines.script[kD1] = {Act{Act::kBreakAfter, 200, 2}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":10,"stream":true})", client);
  ASSERT_EQ(engines.calls.size(), 4u) << client.body;
  std::set<std::string> second{engines.calls[2].node, engines.calls[3].node};
  EXPECT_TRUE(second.count(kD2)) << "the fresh pair's decode is not the one that broke";
  EXPECT_EQ(count_of(client.body, "\"text\":\"t\""), 5u) << client.body;
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u);
}

TEST_F(Orchestrator, WhenTheContinuationBreaksTooAndNoAttemptIsLeftTheStreamEndsWithAnError) {
  start(PdMode::kAggregated);
  engines.script[kD1] = {Act{Act::kBreakAfter, 200, 2}};
  engines.script[kD2] = {Act{Act::kBreakAfter, 200, 1}};
  FakeClient client;
  serve(R"({"prompt":"hi","max_tokens":10,"stream":true})", client);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1, kD2}));
  EXPECT_EQ(count_of(client.body, "\"text\":\"t\""), 3u);
  EXPECT_NE(client.body.find("\"error\""), std::string::npos) << client.body;
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u);
  EXPECT_TRUE(client.ended);
  EXPECT_EQ(migrations(*g, MigrationCause::kConnection, false), 1.0);
}

TEST_F(Orchestrator, AClientLeavingDuringAContinuationCancelsItAndLeaksNothing) {
  start(PdMode::kSequential);
  engines.script[kD1] = {Act{Act::kBreakAfter, 200, 2}};
  engines.script[kD2] = {Act{Act::kHang}};
  FakeClient client;
  serve(R"({"prompt":"hi","max_tokens":10,"stream":true})", client, [&] { client.leave(); });
  ASSERT_EQ(engines.calls.size(), 4u);
  EXPECT_TRUE(engines.calls[3].aborted) << "the continuation's decode was cancelled";
  for (const auto& [name, node] : health()) EXPECT_EQ(node.load.running, 0u) << name;
  EXPECT_EQ(migrations(*g, MigrationCause::kConnection, false), 1.0);
}

// A drained node's streams may finish within timeouts.drain_grace; past it, a stream that can
// migrate moves to another engine, and the node is not blamed for it.
TEST_F(Orchestrator, ADrainedNodesStreamMovesWhenItsGraceRunsOut) {
  start(PdMode::kAggregated, [](ProxyConfig& c) { c.timeouts.drain_grace = 0ms; });
  engines.script[kD1] = {Act{Act::kSlow, 200, 100}};
  FakeClient client;
  serve(R"({"prompt":"hi","max_tokens":200,"stream":true})", client,
        [&] { set_draining(*g, kD1, true); });
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1, kD2}));
  EXPECT_LT(count_of(client.body, "\"text\":\"t\""), 100u) << "the first stream did not finish";
  EXPECT_EQ(count_of(client.body, "data: [DONE]"), 1u);
  EXPECT_EQ(client.body.find("error"), std::string::npos) << client.body;
  EXPECT_EQ(migrations(*g, MigrationCause::kDrain, true), 1.0);
  auto h = health();
  EXPECT_EQ(h[kD1].failures, 0u) << "draining is nobody's failure";
  EXPECT_TRUE(h[kD1].draining);
  EXPECT_EQ(h[kD1].load.running + h[kD2].load.running, 0u);
}

TEST_F(Orchestrator, WithinItsGraceADrainedNodesStreamFinishesWhereItIs) {
  start(PdMode::kAggregated);  // drain_grace 30 s
  engines.script[kD1] = {Act{Act::kSlow, 200, 10}};
  FakeClient client;
  serve(R"({"prompt":"hi","max_tokens":10,"stream":true})", client,
        [&] { set_draining(*g, kD1, true); });
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1}));
  EXPECT_EQ(count_of(client.body, "\"text\":\"t\""), 10u);
  EXPECT_EQ(migrations(*g, MigrationCause::kDrain, true), 0.0);
}

// A decode that cannot load the KV its prefill left (the hold expired while the decode pool was
// slow, vLLM's kv_load_failure_policy "fail" answering 500) is the proxy's problem: the pair is
// redone once, with a request id of its own, and the client gets its answer, not the 500.
TEST_F(Orchestrator, ADecodeThatCannotLoadThePrefillsKvIsPrefilledAgain) {
  start(PdMode::kSequential);
  engines.script[kD1] = {Act{Act::kStatus, 500, 3, "remote KV could not be loaded"}, Act{}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 200) << client.body;
  ASSERT_EQ(engines.calls.size(), 4u);
  EXPECT_TRUE(engines.calls[0].prefill);
  EXPECT_FALSE(engines.calls[1].prefill);
  EXPECT_TRUE(engines.calls[2].prefill) << "a fresh prefill, not a second decode on stale KV";
  EXPECT_FALSE(engines.calls[3].prefill);
  EXPECT_NE(engines.ids[0], engines.ids[2]) << "the redo is a request of its own to the engines";
  EXPECT_EQ(g->metrics.kv_redos->value(), 1.0);
  for (const auto& [name, node] : health()) {
    EXPECT_EQ(node.failures, 0u) << name << ": nobody's fault but the hold's";
    EXPECT_EQ(node.load.running, 0u) << name;
  }
}

// The same when the stream is asked for, and when the decode names the stale parameters with a
// 400: once the redo is spent the client gets the proxy's 502, never a 400 for a valid request.
TEST_F(Orchestrator, StaleTransferParametersAreNeverTheClientsFault) {
  start(PdMode::kSequential);
  const Act stale{Act::kStatus, 400, 3, "kv_transfer_params are stale"};
  engines.script[kD1] = {stale};
  engines.script[kD2] = {stale};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4,"stream":true})", client);
  EXPECT_EQ(client.status, 502) << client.body;
  EXPECT_EQ(client.body.find("stale"), std::string::npos) << client.body;
  ASSERT_EQ(engines.calls.size(), 4u) << "one redo of the pair, then an answer";
  EXPECT_TRUE(engines.calls[2].prefill);
  EXPECT_EQ(g->metrics.kv_redos->value(), 1.0);
}

// With redos turned off a decode's 500 is relayed as the engine's (an engine's answer about the
// request is never turned into another status), and a request of a mode without a KV hand-over
// (aggregated) relays a 400 untouched whatever it says.
TEST_F(Orchestrator, WithoutARedoTheEnginesAnswerIsRelayed) {
  start(PdMode::kSequential, [](ProxyConfig& c) { c.retries.kv_redo_attempts = 0; });
  engines.script[kD1] = {Act{Act::kStatus, 500, 3, "remote KV could not be loaded"}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 500);
  EXPECT_EQ(engines.nodes_called().size(), 2u);
  EXPECT_EQ(health()[kD1].failures, 0u);
}

TEST_F(Orchestrator, AnAggregatedRefusalNamingTheTransferIsStillTheEngines) {
  start(PdMode::kAggregated);
  engines.script[kD1] = {Act{Act::kStatus, 400, 3, "kv_transfer_params must be an object"}};
  FakeClient client;
  serve(R"({"prompt":"hello","max_tokens":4})", client);
  EXPECT_EQ(client.status, 400);
  EXPECT_EQ(engines.nodes_called(), (Calls{kD1}));
}

// Admission counts what a request without max_tokens may really generate (up to the context, as
// vLLM does), not the 16 of vLLM's completions default: the configured max_model_len, else the
// smallest one the engines report on /v1/models. A decode lease holds prompt + max_tokens.
class UnboundedAdmission : public Orchestrator {
 protected:
  std::uint64_t outstanding_while_decoding(const std::string& body) {
    engines.script[kD1] = {Act{Act::kHang}};
    engines.script[kD2] = {Act{Act::kHang}};
    FakeClient client;
    std::uint64_t seen = 0;  // over both nodes: the policy picks either
    serve(body, client, [&] {
      for (const auto& [name, node] : health()) seen += node.load.outstanding_tokens;
      client.leave();
    });
    return seen;
  }
};

TEST_F(UnboundedAdmission, NullOrAbsentMaxTokensCountsTheConfiguredContext) {
  start(PdMode::kAggregated, [](ProxyConfig& c) { c.limits.max_model_len = 5000; });
  EXPECT_EQ(outstanding_while_decoding(R"({"prompt":"hello","max_tokens":null})"), 5000u);
  // Completions without max_tokens are bounded by vLLM's default of 16 (plus the prompt's
  // few estimated tokens).
  const std::uint64_t absent = outstanding_while_decoding(R"({"prompt":"hello"})");
  EXPECT_GE(absent, 16u);
  EXPECT_LT(absent, 32u);
}

TEST_F(UnboundedAdmission, TheEnginesReportedContextBoundsItWhenNoneIsConfigured) {
  start(PdMode::kAggregated);
  ModelList list;
  list.max_model_len = 3000;
  g->models.store(kD1, list, clock.now());
  ModelList longer;
  longer.max_model_len = 9000;
  g->models.store(kD2, longer, clock.now());
  EXPECT_EQ(outstanding_while_decoding(R"({"prompt":"hello","max_tokens":null})"), 3000u)
      << "the smallest context any engine serves";
}

}  // namespace
}  // namespace omni::proxy
