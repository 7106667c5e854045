// omni::http::Server over loopback: framing, keep-alive, streaming, shutdown, limits.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <future>
#include <stdexcept>

#include "server_test_client.hpp"

namespace omni::http::testing {
namespace {

std::string header(const RawResponse& r, std::string_view name) {
  const auto it = r.find(boost::beast::string_view(name.data(), name.size()));
  return it == r.end() ? std::string() : std::string(it->value());
}

Task<void> echo(Request& request, ResponseWriter& writer) {
  Response response;
  response.headers.add("Content-Type", "text/plain");
  response.headers.add("X-Remote", request.remote);
  response.body =
      std::string(method_name(request.method)) + " " + request.target + "\n" + request.body;
  (void)co_await writer.send(std::move(response));
}

// Waits (polling, on the handler's executor) until `flag` is set; false after `limit`.
Task<bool> wait_for_flag(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > deadline) co_return false;
    timer.expires_after(2ms);
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return true;
}

bool can_connect(std::uint16_t port) {
  asio::io_context io;
  tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  return !ec;
}

ServerOptions small_options() {
  ServerOptions options;
  options.shutdown_grace = 2s;
  return options;
}

TEST(Server, EchoesGetAndPost) {
  RunningServer server(small_options(), echo);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET /hello?x=1 HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto get = client.read_response();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->result_int(), 200u);
  EXPECT_EQ(get->body(), "GET /hello?x=1\n");
  EXPECT_EQ(header(*get, "Content-Length"), "15");
  EXPECT_EQ(header(*get, "Server"), "omni");
  EXPECT_EQ(header(*get, "Date").size(), 29u);  // "Sun, 06 Nov 1994 08:49:37 GMT"
  EXPECT_EQ(header(*get, "X-Remote").rfind("127.0.0.1:", 0), 0u);

  ASSERT_TRUE(client.write("POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello"));
  auto post = client.read_response();
  ASSERT_TRUE(post);
  EXPECT_EQ(post->body(), "POST /v1/echo\nhello");
  EXPECT_EQ(server->stats().requests, 2u);
}

TEST(Server, KeepAliveCarriesSeveralRequestsIncludingPipelined) {
  RunningServer server(small_options(), echo);
  RawClient client(server.port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.write("GET /n" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body(), "GET /n" + std::to_string(i) + "\n");
  }
  ASSERT_TRUE(
      client.write("GET /p1 HTTP/1.1\r\nHost: t\r\n\r\nGET /p2 HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto first = client.read_response();
  auto second = client.read_response();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->body(), "GET /p1\n");
  EXPECT_EQ(second->body(), "GET /p2\n");
  EXPECT_EQ(server->stats().connections_accepted, 1u);
  EXPECT_EQ(server->stats().requests, 5u);
}

TEST(Server, ConnectionCloseIsHonoured) {
  RunningServer server(small_options(), echo);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(header(*response, "Connection"), "close");
  EXPECT_TRUE(client.wait_closed());
}

TEST(Server, Http10ClosesUnlessKeepAliveIsAsked) {
  RunningServer server(small_options(), echo);
  RawClient keep(server.port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(keep.write("GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    auto response = keep.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(header(*response, "Connection"), "keep-alive");
  }
  RawClient plain(server.port());
  ASSERT_TRUE(plain.write("GET /c HTTP/1.0\r\n\r\n"));
  auto response = plain.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body(), "GET /c\n");
  EXPECT_TRUE(plain.wait_closed());
}

TEST(Server, HeadAnswersHeadersWithoutBody) {
  RunningServer server(small_options(), echo);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto head = client.read_response(5000ms, /*head=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(header(*head, "Content-Length"), "8");  // the length "HEAD /h\n" would have
  // A stray body would be read as the start of the next response and break it.
  ASSERT_TRUE(client.write("GET /g HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto get = client.read_response();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->body(), "GET /g\n");
}

TEST(Server, AcceptsChunkedRequestBody) {
  RunningServer server(small_options(), echo);
  RawClient client(server.port());
  ASSERT_TRUE(
      client.write("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body(), "POST /c\nhello world");
}

TEST(Server, AnswersExpect100ContinueBeforeTheBody) {
  RunningServer server(small_options(), echo);
  RawClient client(server.port());
  ASSERT_TRUE(client.write(
      "POST /e HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  ASSERT_TRUE(client.read_until("HTTP/1.1 100 Continue\r\n\r\n"));
  ASSERT_TRUE(client.write("body"));
  client.received().clear();
  ASSERT_TRUE(client.read_until("POST /e\nbody"));
  EXPECT_EQ(client.received().rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
}

TEST(Server, StreamsEachChunkBeforeTheHandlerFinishes) {
  std::atomic<bool> client_saw_first{false};
  std::atomic<bool> handler_was_signalled{false};
  auto handler = [&](Request&, ResponseWriter& writer) -> Task<void> {
    Headers headers;
    headers.add("Content-Type", "text/event-stream");
    if (!(co_await writer.begin_stream(200, std::move(headers))).ok()) co_return;
    (void)co_await writer.write_chunk("data: one\n\n");
    // Blocks until the client has received the first chunk: only a flushed chunk gets there.
    handler_was_signalled = co_await wait_for_flag(client_saw_first, 5000ms);
    (void)co_await writer.write_chunk("data: two\n\n");
    (void)co_await writer.end_stream();
  };
  RunningServer server(small_options(), handler);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(client.read_until("b\r\ndata: one\n\n\r\n"));
  EXPECT_EQ(client.received().find("two"), std::string::npos);
  EXPECT_NE(client.received().find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  client_saw_first = true;
  ASSERT_TRUE(client.read_until("b\r\ndata: two\n\n\r\n0\r\n\r\n"));
  EXPECT_TRUE(handler_was_signalled.load());
}

TEST(Server, GracefulStopLetsTheInFlightRequestFinish) {
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  auto handler = [&](Request& request, ResponseWriter& writer) -> Task<void> {
    if (request.target == "/slow") {
      entered = true;
      co_await wait_for_flag(release, 5000ms);
    }
    co_await echo(request, writer);
  };
  RunningServer server(small_options(), handler);
  RawClient idle(server.port());
  ASSERT_TRUE(idle.write("GET /fast HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(idle.read_response());
  RawClient busy(server.port());
  ASSERT_TRUE(busy.write("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(eventually([&] { return entered.load(); }));

  auto stopped = std::async(std::launch::async, [&] { server->stop(); });
  // Stopping has begun once the listener is gone; the idle keep-alive connection goes at once.
  ASSERT_TRUE(eventually([&] { return !can_connect(server.port()); }));
  EXPECT_TRUE(idle.wait_closed());
  release = true;
  auto response = busy.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body(), "GET /slow\n");
  EXPECT_EQ(header(*response, "Connection"), "close");
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(server->stats().connections_active, 0u);
}

TEST(Server, StopCancelsARequestThatOverrunsTheGracePeriod) {
  std::atomic<bool> entered{false};
  std::atomic<bool> cancelled{false};
  const std::atomic<bool> never{false};
  auto handler = [&](Request&, ResponseWriter&) -> Task<void> {
    entered = true;
    try {
      co_await wait_for_flag(never, 30000ms);
    } catch (const boost::system::system_error&) {
      cancelled = true;
      throw;
    }
  };
  ServerOptions options = small_options();
  options.shutdown_grace = 100ms;
  RunningServer server(options, handler);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  auto stopped = std::async(std::launch::async, [&] { server->stop(); });
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(cancelled.load());
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(client.received(), "");
  EXPECT_EQ(server->stats().connections_active, 0u);
  server->stop();  // idempotent
}

TEST(Server, RejectsConnectionsPastTheLimitWith503) {
  ServerOptions options = small_options();
  options.max_connections = 1;
  RunningServer server(options, echo);
  // The first client is in the middle of a request, so it is not idle and cannot be shed
  // (framing_test covers the shedding of idle connections).
  RawClient first(server.port());
  ASSERT_TRUE(first.write("GET /a HTTP/1.1\r\nHo"));
  ASSERT_TRUE(eventually([&] { return server->stats().connections_active == 1; }));

  RawClient second(server.port());
  ASSERT_TRUE(second.write("GET /b HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto rejected = second.read_response();
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->result_int(), 503u);
  EXPECT_NE(rejected->body().find("\"code\":503"), std::string::npos);
  EXPECT_EQ(header(*rejected, "Content-Type"), "application/json");
  EXPECT_TRUE(second.wait_closed());
  EXPECT_EQ(server->stats().connections_rejected, 1u);

  ASSERT_TRUE(first.write("st: t\r\n\r\n"));
  auto still = first.read_response();
  ASSERT_TRUE(still);
  EXPECT_EQ(still->result_int(), 200u);
}

TEST(Server, PortZeroBindsAnEphemeralPortAndAUsedPortFails) {
  RunningServer server(small_options(), echo);
  ASSERT_NE(server.port(), 0);
  ServerOptions clash = small_options();
  clash.port = server.port();
  Server second(clash, echo);
  const Status started = second.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code, ErrorCode::kIo);
  second.stop();
}

TEST(Server, RejectsInvalidOptions) {
  ServerOptions options;
  options.io_threads = 0;
  Server server(options, echo);
  const Status started = server.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code, ErrorCode::kInvalidArgument);
}

TEST(Server, HandlerThatDoesNotAnswerGets500AndTheConnectionStays) {
  RunningServer server(small_options(), [](Request&, ResponseWriter&) -> Task<void> { co_return; });
  RawClient client(server.port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->result_int(), 500u);
    EXPECT_NE(response->body().find("\"code\":500"), std::string::npos);
  }
}

TEST(Server, HandlerThatThrowsGets500AndClose) {
  RunningServer server(small_options(), [](Request&, ResponseWriter&) -> Task<void> {
    throw std::runtime_error("boom (expected by the test)");
    co_return;
  });
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->result_int(), 500u);
  EXPECT_EQ(header(*response, "Connection"), "close");
  EXPECT_TRUE(client.wait_closed());
  EXPECT_TRUE(eventually([&] { return server->stats().connections_active == 0; }));
}

TEST(Server, SpreadsConnectionsOverSeveralIoThreads) {
  ServerOptions options = small_options();
  options.io_threads = 3;
  RunningServer server(options, echo);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(std::make_unique<RawClient>(server.port()));
  for (auto& client : clients) ASSERT_TRUE(client->write("GET /m HTTP/1.1\r\nHost: t\r\n\r\n"));
  for (auto& client : clients) {
    auto response = client->read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body(), "GET /m\n");
  }
  EXPECT_EQ(server->stats().connections_accepted, 6u);
}

}  // namespace
}  // namespace omni::http::testing
