// Request framing against smuggling and resource exhaustion (RFC 9112), and the server hooks
// that let an application refuse a request on its head alone and see every refusal.
//
// The smuggling cases come from an adversarial probe of omni-proxy: a Transfer-Encoding whose
// final coding is not chunked made the server read an empty body and then serve the body's
// bytes as a second request (a smuggled GET /admin/... answered on its own).
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <mutex>
#include <vector>

#include "server_test_client.hpp"

namespace omni::http::testing {
namespace {

// Answers with the method, the target, the Host it saw and the body size, and counts calls.
struct Recorder {
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<std::string> targets;

  Handler handler() {
    return [this](Request& request, ResponseWriter& writer) -> Task<void> {
      calls.fetch_add(1);
      {
        const std::lock_guard lock(mu);
        targets.push_back(request.target);
      }
      Response response;
      response.body = std::string(method_name(request.method)) + " " + request.target +
                      " host=" + std::string(request.headers.get("Host").value_or("-")) +
                      " body=" + std::to_string(request.body.size()) +
                      " trailer=" + (request.headers.contains("X-Trailer") ? "yes" : "no");
      (void)co_await writer.send(std::move(response));
    };
  }
};

class Framing : public ::testing::Test {
 protected:
  void start(ServerOptions options = {}, ServerHooks hooks = {}) {
    options.max_header_bytes = 1024;
    options.max_body_bytes = 4096;
    options.shutdown_grace = 1s;
    server_.emplace(options, recorder_.handler(), std::move(hooks));
  }
  std::uint16_t port() { return server_->port(); }
  ServerStats stats() { return (**server_).stats(); }

  // `bytes` get `status` and a close, and no request reaches the handler.
  void expect_refused(std::string_view bytes, unsigned status) {
    const int before = recorder_.calls.load();
    RawClient client(port());
    ASSERT_TRUE(client.write(bytes));
    auto response = client.read_response();
    ASSERT_TRUE(response) << "no answer to: " << bytes;
    EXPECT_EQ(response->result_int(), status) << bytes << "\n" << response->body();
    EXPECT_EQ((*response)[boost::beast::http::field::connection], "close");
    EXPECT_TRUE(client.wait_closed());
    // Nothing after the refused head was served as a request of its own.
    EXPECT_FALSE(client.received().find("HTTP/1.1") != std::string::npos) << client.received();
    EXPECT_EQ(recorder_.calls.load(), before) << "a request reached the handler: " << bytes;
  }

  Recorder recorder_;
  std::optional<RunningServer> server_;
};

// The body of a smuggling attempt: a whole second request.
const std::string kSmuggled = "GET /admin/secret HTTP/1.1\r\nHost: t\r\n\r\n";

std::string with_coding(std::string_view coding) {
  return "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: " + std::string(coding) + "\r\n\r\n" +
         kSmuggled;
}

TEST_F(Framing, FinalCodingOtherThanChunkedIs400NotTwoRequests) {
  start();
  for (const char* coding : {"xchunked", "identity", "chunked, gzip", "chunked,", "chunkedx",
                             "gzip", "chunked, chunked"}) {
    SCOPED_TRACE(coding);
    // "chunked," ends with an empty list element, which does not count: chunked is final.
    if (std::string_view(coding) == "chunked,") continue;
    expect_refused(with_coding(coding), 400);
  }
}

TEST_F(Framing, UnderstoodFramingButUnknownCodingIs501) {
  start();
  expect_refused(
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n",
      501);
}

TEST_F(Framing, ContentLengthWithTransferEncodingIsRefusedInEitherOrder) {
  start();
  expect_refused(
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 40\r\nTransfer-Encoding: gzip\r\n\r\n" +
          kSmuggled,
      400);
  expect_refused(
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\nContent-Length: 40\r\n\r\n" +
          kSmuggled,
      400);
  expect_refused(
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n",
      400);
}

TEST_F(Framing, TransferEncodingInHttp10IsRefused) {
  start();
  expect_refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                 400);
}

TEST_F(Framing, ChunkedStillWorksWithAnEmptyListElement) {
  start();
  RawClient client(port());
  ASSERT_TRUE(
      client.write("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ,chunked\r\n\r\n"
                   "5\r\nhello\r\n0\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->result_int(), 200u);
  EXPECT_EQ(response->body(), "POST /c host=t body=5 trailer=no");
}

TEST_F(Framing, MissingOrDuplicateHostIs400) {
  start();
  expect_refused("GET / HTTP/1.1\r\n\r\n", 400);
  expect_refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
  expect_refused("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400);
  expect_refused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
  expect_refused("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
  // HTTP/1.0 without Host is fine.
  RawClient client(port());
  ASSERT_TRUE(client.write("GET /old HTTP/1.0\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->result_int(), 200u);
}

TEST_F(Framing, AbsoluteFormBecomesOriginFormWithItsAuthorityAsHost) {
  start();
  RawClient client(port());
  ASSERT_TRUE(
      client.write("GET http://Example.com:8000/v1/models?x=1 HTTP/1.1\r\nHost: ignored\r\n\r\n"
                   "GET http://example.com HTTP/1.1\r\nHost: e\r\n\r\n"));
  auto first = client.read_response();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->body(), "GET /v1/models?x=1 host=Example.com:8000 body=0 trailer=no");
  auto second = client.read_response();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body(), "GET / host=example.com body=0 trailer=no");
}

TEST_F(Framing, OtherTargetFormsAre400) {
  start();
  expect_refused("GET relative/path HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  expect_refused("GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  expect_refused("GET http://user@evil/ HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  expect_refused("GET ftp://h/x HTTP/1.1\r\nHost: t\r\n\r\n", 400);
}

TEST_F(Framing, ChunkExtensionsAreBoundedAndCountAgainstTheBody) {
  start();
  // One extension longer than the header limit: refused before it is buffered whole.
  {
    const int before = recorder_.calls.load();
    RawClient client(port());
    ASSERT_TRUE(
        client.write("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext="));
    // Keep sending extension bytes: a server that buffers them all would never answer.
    bool answered = false;
    for (int i = 0; i < 64 && !answered; ++i) {
      if (!client.write(std::string(1024, 'e'))) break;
      answered = client.read_until("\r\n\r\n", 20ms);
    }
    ASSERT_TRUE(answered || client.read_until("\r\n\r\n", 2000ms)) << "no answer";
    EXPECT_EQ(client.received().rfind("HTTP/1.1 413 ", 0), 0u) << client.received();
    EXPECT_EQ(recorder_.calls.load(), before);
  }
  // Many small extensions, each fine, together over the body limit.
  std::string request = "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 40; ++i) request += "1;" + std::string(200, 'x') + "\r\nz\r\n";
  request += "0\r\n\r\n";
  expect_refused(request, 413);
}

TEST_F(Framing, TrailersAreBoundedAndNeverMergedIntoTheHeaders) {
  start();
  {
    RawClient client(port());
    ASSERT_TRUE(
        client.write("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\nhello\r\n0\r\nX-Trailer: sneaky\r\n\r\n"));
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->result_int(), 200u);
    EXPECT_EQ(response->body(), "POST / host=t body=5 trailer=no");
  }
  std::string big =
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
  for (int i = 0; i < 8; ++i)
    big += "X-T" + std::to_string(i) + ": " + std::string(200, 'v') + "\r\n";
  big += "\r\n";
  expect_refused(big, 431);
}

TEST_F(Framing, ScreenedHeadIsAnsweredBeforeItsBodyIsRead) {
  std::atomic<int> screened{0};
  ServerHooks hooks;
  hooks.screen_head = [&](const Request& head) -> std::optional<Response> {
    if (head.headers.get("Authorization") == "Bearer ok") return std::nullopt;
    screened.fetch_add(1);
    EXPECT_TRUE(head.body.empty());
    return error_response(401, "no key");
  };
  start({}, hooks);
  // The body is announced but never sent: the answer must come anyway, without waiting.
  RawClient client(port());
  ASSERT_TRUE(client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4000\r\n\r\n"));
  auto response = client.read_response(2000ms);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->result_int(), 401u);
  EXPECT_EQ((*response)[boost::beast::http::field::connection], "close");
  EXPECT_EQ(screened.load(), 1);
  EXPECT_EQ(recorder_.calls.load(), 0);
  // "Expect: 100-continue" gets no 100 when the head is refused.
  RawClient waiting(port());
  ASSERT_TRUE(waiting.write(
      "POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  ASSERT_TRUE(waiting.read_until("\r\n\r\n"));
  EXPECT_EQ(waiting.received().rfind("HTTP/1.1 401 ", 0), 0u) << waiting.received();
  RawClient allowed(port());
  ASSERT_TRUE(allowed.write(
      "POST / HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ok\r\nContent-Length: 2\r\n\r\nhi"));
  auto ok = allowed.read_response();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->result_int(), 200u);
  EXPECT_EQ(stats().screened, 2u);
}

TEST_F(Framing, EveryRefusalReachesOnRefused) {
  std::mutex mu;
  std::vector<std::pair<int, std::string>> refused;
  ServerHooks hooks;
  hooks.on_refused = [&](const RefusedRequest& r) {
    const std::lock_guard lock(mu);
    refused.emplace_back(r.status, std::string(r.target));
  };
  start({}, hooks);
  expect_refused("garbage\r\n\r\n", 400);
  expect_refused("BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501);
  expect_refused("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 999999\r\n\r\n", 413);
  expect_refused(with_coding("gzip"), 400);
  ASSERT_TRUE(eventually([&] {
    const std::lock_guard lock(mu);
    return refused.size() == 4;
  }));
  const std::lock_guard lock(mu);
  EXPECT_EQ(refused[0], (std::pair<int, std::string>{400, ""}));
  EXPECT_EQ(refused[1].first, 501);
  EXPECT_EQ(refused[2], (std::pair<int, std::string>{413, "/big"}));
  EXPECT_EQ(refused[3], (std::pair<int, std::string>{400, "/"}));
}

// A client that half-closes after its request, while the handler waits for something else:
// the handler gives up (it logged the client as gone); the server must not then answer 500.
TEST(HalfClose, HandlerThatGivesUpOnAGoneClientGetsNo500) {
  ServerOptions options;
  options.shutdown_grace = 1s;
  std::atomic<bool> gone{false};
  Handler handler = [&](Request&, ResponseWriter& writer) -> Task<void> {
    std::atomic<bool> noticed{false};
    EXPECT_TRUE(writer.watch_close([&] { noticed = true; }));
    auto executor = co_await boost::asio::this_coro::executor;
    boost::asio::steady_timer timer(executor);
    for (int i = 0; i < 200 && !noticed; ++i) {
      timer.expires_after(5ms);
      (void)co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    gone = noticed.load();
    // Returns without an answer, as omni-proxy does for a client that left.
  };
  RunningServer server(options, handler);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi"));
  client.shutdown_send();
  EXPECT_TRUE(client.wait_closed());
  EXPECT_TRUE(gone.load());
  EXPECT_EQ(client.received(), "") << "a response was sent to a client that left";
  EXPECT_EQ(server->stats().abandoned, 1u);
}

TEST(ConnectionCap, IdleConnectionsAreShedForANewClient) {
  ServerOptions options;
  options.max_connections = 3;
  options.shutdown_grace = 1s;
  Handler handler = [](Request&, ResponseWriter& writer) -> Task<void> {
    Response response;  // named: GCC 12 mishandles temporaries inside co_await
    (void)co_await writer.send(std::move(response));
  };
  RunningServer server(options, handler);
  // Three idle keep-alive clients fill the cap.
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_TRUE(idle.back()->write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(idle.back()->read_response());
  }
  ASSERT_TRUE(eventually([&] { return server->stats().connections_active == 3; }));
  // A probe still gets through: the oldest idle connection makes room.
  RawClient probe(server.port());
  ASSERT_TRUE(probe.write("GET /health HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto response = probe.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->result_int(), 200u);
  EXPECT_TRUE(idle.front()->wait_closed());
  EXPECT_EQ(idle.front()->received(), "");
  EXPECT_EQ(server->stats().idle_shed, 1u);
  EXPECT_EQ(server->stats().connections_rejected, 0u);
}

TEST(ConnectionCap, BusyConnectionsAreNotShedAndTheNewClientGets503) {
  ServerOptions options;
  options.max_connections = 2;
  options.shutdown_grace = 1s;
  Handler handler = [](Request&, ResponseWriter& writer) -> Task<void> {
    Response response;  // named: GCC 12 mishandles temporaries inside co_await
    (void)co_await writer.send(std::move(response));
  };
  RunningServer server(options, handler);
  // Two clients in the middle of a request head: busy, not idle.
  RawClient a(server.port());
  RawClient b(server.port());
  ASSERT_TRUE(a.write("GET / HTTP/1.1\r\nHo"));
  ASSERT_TRUE(b.write("GET / HTTP/1.1\r\nHo"));
  ASSERT_TRUE(eventually([&] { return server->stats().connections_active == 2; }));
  RawClient late(server.port());
  auto response = late.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->result_int(), 503u);
  EXPECT_EQ(server->stats().idle_shed, 0u);
}

}  // namespace
}  // namespace omni::http::testing

namespace omni::http::testing {
namespace {

// A stream written to a client that does not read: the handler gets past the kernel's buffers
// up to stream_backlog_bytes (it can finish reading its own source, e.g. an engine, while the
// client catches up), then waits; everything reaches the client in order once it reads.
struct BacklogCase {
  std::size_t backlog_bytes;
  bool handler_finishes_before_the_client_reads;
};

class StreamBacklog : public ::testing::TestWithParam<BacklogCase> {};

constexpr std::size_t kChunk = 64 * 1024;
constexpr int kChunks = 512;  // 32 MiB: more than loopback's socket buffers hold

TEST_P(StreamBacklog, SlowClientHoldsTheHandlerOnlyPastTheBound) {
  ServerOptions options;
  options.shutdown_grace = 1s;
  options.stream_backlog_bytes = GetParam().backlog_bytes;
  std::atomic<bool> all_written{false};
  Handler handler = [&](Request&, ResponseWriter& writer) -> Task<void> {
    Headers headers;
    (void)co_await writer.begin_stream(200, std::move(headers));
    std::string chunk(kChunk, 'x');
    for (int i = 0; i < kChunks; ++i) {
      chunk[0] = static_cast<char>('a' + i % 26);
      if (!co_await writer.write_chunk(chunk)) co_return;
    }
    all_written = true;
    (void)co_await writer.end_stream();
  };
  RunningServer server(options, handler);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  const bool finished = eventually([&] { return all_written.load(); }, 1500ms);
  EXPECT_EQ(finished, GetParam().handler_finishes_before_the_client_reads);
  auto response = client.read_response(20000ms);
  ASSERT_TRUE(response);
  ASSERT_EQ(response->body().size(), kChunk * kChunks);
  for (int i = 0; i < kChunks; ++i) {
    ASSERT_EQ(response->body()[static_cast<std::size_t>(i) * kChunk],
              static_cast<char>('a' + i % 26))
        << "chunk " << i << " out of order";
  }
  EXPECT_TRUE(all_written.load());
}

INSTANTIATE_TEST_SUITE_P(Bounds, StreamBacklog,
                         ::testing::Values(BacklogCase{64 * 1024 * 1024, true},
                                           BacklogCase{64 * 1024, false}));

// A client that stops reading for longer than write_timeout is cut: the stream fails, the
// connection closes, the handler learns it from write_chunk or end_stream.
TEST(StreamBacklogDeadline, AClientThatStopsReadingIsCutAtTheWriteTimeout) {
  ServerOptions options;
  options.shutdown_grace = 1s;
  options.write_timeout = 300ms;
  std::atomic<int> failed{0};
  Handler handler = [&](Request&, ResponseWriter& writer) -> Task<void> {
    Headers headers;
    (void)co_await writer.begin_stream(200, std::move(headers));
    const std::string chunk(kChunk, 'y');
    for (int i = 0; i < kChunks; ++i) {
      if (!co_await writer.write_chunk(chunk)) {
        failed = 1;
        co_return;
      }
    }
    if (!co_await writer.end_stream()) failed = 2;
  };
  RunningServer server(options, handler);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(eventually([&] { return failed.load() != 0; }, 10000ms));
  EXPECT_TRUE(eventually([&] { return server->stats().connections_active == 0; }));
  EXPECT_GE(server->stats().timeouts, 1u);
}

}  // namespace
}  // namespace omni::http::testing
