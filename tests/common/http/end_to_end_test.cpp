// The runtime's HTTP pieces together: omni::http::Server + Router + SseWriter on one side,
// omni::http::Client + SseReader on the other, over loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "omni/http/client.hpp"
#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"

namespace omni::http {
namespace {

namespace asio = boost::asio;

// Runs one coroutine to completion on `io` and returns its result. (co_spawn's own result
// channel needs a default-constructible T, which Result<T> is not.)
template <class T>
T run(asio::io_context& io, Task<T> task) {
  std::optional<T> out;
  std::exception_ptr error;
  asio::co_spawn(
      io, [&]() -> Task<void> { out.emplace(co_await std::move(task)); },
      [&](std::exception_ptr e) { error = e; });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

constexpr Duration kPoll = std::chrono::milliseconds(1);

// Sleeps; a cancellation (server shutdown) just ends the sleep early.
Task<void> sleep_for(Duration d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

class EndToEnd : public ::testing::Test {
 protected:
  void start(ServerOptions options = {}) {
    Router router;
    router.add(Method::kPost, "/echo", [](Request& req, ResponseWriter& w) -> Task<void> {
      Response r;
      r.headers.add("Content-Type", "application/octet-stream");
      r.headers.add("X-Request-Id", std::string(req.headers.get("X-Request-Id").value_or("")));
      r.body = req.body;
      (void)co_await w.send(std::move(r));
    });
    router.add(Method::kGet, "/events", [this](Request& req, ResponseWriter& w) -> Task<void> {
      const int n = std::stoi(std::string(req.query().substr(2)));  // "n=<count>"
      SseWriter sse(w);
      if (!(co_await sse.begin())) co_return;
      for (int i = 0; i < n; ++i) {
        const std::string data = "{\"i\":" + std::to_string(i) + "}";
        if (!(co_await sse.send_data(data))) co_return;
        if (i == 0 && gate_events_) {
          // Hold the stream open until the client says it saw event 0: proves the flush.
          while (!released_.load()) co_await sleep_for(kPoll);
        }
      }
      (void)co_await sse.send_data("[DONE]");
      (void)co_await sse.end();
    });
    server_ = std::make_unique<Server>(options, router.handler());
    ASSERT_TRUE(server_->start().ok());
    endpoint_ = Endpoint{"127.0.0.1", server_->port()};
  }

  void TearDown() override {
    if (server_) server_->stop();
  }

  std::unique_ptr<Server> server_;
  Endpoint endpoint_;
  bool gate_events_ = false;
  std::atomic<bool> released_{false};
  asio::io_context io_;
};

TEST_F(EndToEnd, EchoesBodiesOverOneKeptAliveConnection) {
  start();
  Client client(io_.get_executor());
  for (int i = 0; i < 20; ++i) {
    Request req;
    req.method = Method::kPost;
    req.target = "/echo";
    req.headers.add("X-Request-Id", "req-" + std::to_string(i));
    req.body = std::string(static_cast<std::size_t>(100 * i), static_cast<char>('a' + i));
    auto res = run(io_, client.send(endpoint_, std::move(req)));
    ASSERT_TRUE(res.ok()) << res.error().to_string();
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body,
              std::string(static_cast<std::size_t>(100 * i), static_cast<char>('a' + i)));
    EXPECT_EQ(res->headers.get("X-Request-Id").value_or(""), "req-" + std::to_string(i));
    EXPECT_EQ(client.idle_connections(), 1u);
  }
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  EXPECT_EQ(server_->stats().requests, 20u);
}

TEST_F(EndToEnd, UnknownRouteIsAJsonError) {
  start();
  Client client(io_.get_executor());
  Request req;
  req.target = "/nope";
  auto res = run(io_, client.send(endpoint_, std::move(req)));
  ASSERT_TRUE(res.ok()) << res.error().to_string();
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("\"error\""), std::string::npos);
  EXPECT_NE(res->body.find("\"code\":404"), std::string::npos);
}

TEST_F(EndToEnd, RelaysServerSentEventsInOrder) {
  start();
  Client client(io_.get_executor());
  auto events = run(io_, [&]() -> Task<Result<std::vector<std::string>>> {
    Request req;
    req.target = "/events?n=200";
    auto stream = co_await client.open(endpoint_, std::move(req));
    if (!stream) co_return stream.error();
    EXPECT_EQ((*stream)->headers().get("Content-Type").value_or(""), "text/event-stream");
    SseReader reader(**stream);
    std::vector<std::string> data;
    for (;;) {
      auto ev = co_await reader.next();
      if (!ev) co_return ev.error();
      if (!ev->has_value()) break;
      data.push_back((*ev)->data);
    }
    co_return data;
  }());
  ASSERT_TRUE(events.ok()) << events.error().to_string();
  ASSERT_EQ(events->size(), 201u);
  for (int i = 0; i < 200; ++i)
    EXPECT_EQ((*events)[static_cast<std::size_t>(i)], "{\"i\":" + std::to_string(i) + "}");
  EXPECT_EQ(events->back(), "[DONE]");
}

TEST_F(EndToEnd, EachEventArrivesBeforeTheHandlerFinishes) {
  gate_events_ = true;
  start();
  Client client(io_.get_executor());
  auto first = run(io_, [&]() -> Task<Result<std::string>> {
    Request req;
    req.target = "/events?n=3";
    auto stream = co_await client.open(endpoint_, std::move(req));
    if (!stream) co_return stream.error();
    SseReader reader(**stream);
    auto ev = co_await reader.next();  // the server holds event 1 until released_
    if (!ev) co_return ev.error();
    if (!ev->has_value()) co_return make_error(ErrorCode::kProtocol, "stream ended early");
    std::string data = (*ev)->data;
    released_ = true;
    while (true) {  // drain the rest so the stream ends cleanly
      auto more = co_await reader.next();
      if (!more || !more->has_value()) break;
    }
    co_return data;
  }());
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(*first, "{\"i\":0}");
}

TEST_F(EndToEnd, ManyConcurrentClientsAllSucceed) {
  ServerOptions options;
  options.io_threads = 2;
  start(options);
  Client client(io_.get_executor());
  constexpr int kClients = 64;
  int ok = 0;
  for (int i = 0; i < kClients; ++i) {
    asio::co_spawn(
        io_,
        [&, i]() -> Task<void> {
          for (int j = 0; j < 5; ++j) {
            Request req;
            req.method = Method::kPost;
            req.target = "/echo";
            req.body = std::to_string(i * 100 + j);
            auto res = co_await client.send(endpoint_, std::move(req));
            if (res && res->status == 200 && res->body == std::to_string(i * 100 + j)) ++ok;
          }
        },
        asio::detached);
  }
  io_.run();
  EXPECT_EQ(ok, kClients * 5);
  EXPECT_EQ(server_->stats().requests, static_cast<std::uint64_t>(kClients * 5));
}

TEST_F(EndToEnd, StopEndsALiveStreamWithoutHanging) {
  gate_events_ = true;  // the handler never gets released: only stop() can end it
  ServerOptions options;
  options.shutdown_grace = std::chrono::milliseconds(100);
  start(options);
  Client client(io_.get_executor());
  auto outcome = run(io_, [&]() -> Task<Result<int>> {
    Request req;
    req.target = "/events?n=3";
    auto stream = co_await client.open(endpoint_, std::move(req));
    if (!stream) co_return stream.error();
    SseReader reader(**stream);
    auto ev = co_await reader.next();
    if (!ev || !ev->has_value()) co_return make_error(ErrorCode::kProtocol, "no first event");
    std::thread stopper([this] { server_->stop(); });
    int events_after_stop = 0;
    Status end = ok_status();
    for (;;) {
      auto more = co_await reader.next();
      if (!more) {
        end = more.error();
        break;
      }
      if (!more->has_value()) break;
      ++events_after_stop;
    }
    stopper.join();
    EXPECT_FALSE(end.ok());  // the stream was cut, not completed
    co_return events_after_stop;
  }());
  ASSERT_TRUE(outcome.ok()) << outcome.error().to_string();
  EXPECT_EQ(*outcome, 0);
  EXPECT_EQ(server_->stats().connections_active, 0u);
}

}  // namespace
}  // namespace omni::http
