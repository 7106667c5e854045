// omni::http::Server against clients that stall: the write deadline (a client that never
// reads), the body deadline (a body that stops or trickles), and a stream to an HTTP/1.0
// client, which has no chunked encoding and so must be delimited by closing the connection.
// Every deadline is 200 ms; the tests assert that it fired, never how long it took.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server_test_client.hpp"

namespace omni::http::testing {
namespace {

constexpr auto kShortTimeout = 200ms;

// Long defaults everywhere; each test shortens only the deadline it is about.
ServerOptions quiet_options() {
  ServerOptions options;
  options.shutdown_grace = 1s;
  return options;
}

Task<void> plain_ok(Request& request, ResponseWriter& writer) {
  Response response;
  response.body = "ok " + std::to_string(request.body.size());
  (void)co_await writer.send(std::move(response));
}

// The head and the body of a raw response, split at the blank line.
struct RawParts {
  std::string head;  // up to and including the final CRLF of the last header
  std::string body;
};

RawParts split_response(const std::string& raw) {
  const std::size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return RawParts{raw, {}};
  return RawParts{raw.substr(0, end + 2), raw.substr(end + 4)};
}

// A normal request on a new connection still gets its answer, and once every client has
// gone the server holds no connection.
void expect_still_serving(Server& server) {
  {
    RawClient client(server.port());
    ASSERT_TRUE(client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"));
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->result_int(), 200u);
    EXPECT_EQ(response->body(), "ok 3");
  }
  EXPECT_TRUE(eventually([&] { return server.stats().connections_active == 0; }))
      << server.stats().connections_active << " connections still open";
}

// --- HTTP/1.0 streaming -------------------------------------------------------------------

// What the streaming handler writes: an empty piece (which must not end anything) and a
// piece that looks like a last chunk (which must pass through as plain bytes).
const std::vector<std::string>& stream_pieces() {
  static const std::vector<std::string> pieces{"data: one\n\n", "", std::string(5000, 'x'),
                                               "0\r\n\r\n", "tail"};
  return pieces;
}

std::string stream_body() {
  std::string body;
  for (const auto& piece : stream_pieces()) body += piece;
  return body;
}

class Http10Stream : public ::testing::TestWithParam<std::string_view> {};

TEST_P(Http10Stream, IsDelimitedByCloseWithoutChunkedEncoding) {
  std::atomic<bool> all_written{false};
  auto handler = [&](Request&, ResponseWriter& writer) -> Task<void> {
    Headers headers;
    headers.add("Content-Type", "text/event-stream");
    headers.add("Transfer-Encoding", "chunked");  // the server's to decide: dropped
    if (!(co_await writer.begin_stream(200, std::move(headers))).ok()) co_return;
    for (const auto& piece : stream_pieces()) {
      const std::string_view data = piece;
      if (!(co_await writer.write_chunk(data)).ok()) co_return;
    }
    all_written = (co_await writer.end_stream()).ok();
  };
  RunningServer server(quiet_options(), handler);
  RawClient client(server.port());
  ASSERT_TRUE(client.write(GetParam()));
  ASSERT_TRUE(client.wait_closed()) << "an HTTP/1.0 stream must end with the connection";
  EXPECT_TRUE(all_written.load());

  const RawParts parts = split_response(client.received());
  EXPECT_EQ(parts.head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << parts.head;
  EXPECT_EQ(parts.head.find("Transfer-Encoding"), std::string::npos) << parts.head;
  EXPECT_EQ(parts.head.find("Content-Length"), std::string::npos) << parts.head;
  EXPECT_NE(parts.head.find("\r\nConnection: close\r\n"), std::string::npos) << parts.head;
  EXPECT_NE(parts.head.find("\r\nContent-Type: text/event-stream\r\n"), std::string::npos);
  EXPECT_EQ(parts.body, stream_body());  // exactly the bytes written, no framing
  client.close();
  EXPECT_EQ(server->stats().requests, 1u);
  EXPECT_TRUE(eventually([&] { return server->stats().connections_active == 0; }));
}

// Asking for keep-alive changes nothing: without a length the close is the only delimiter.
INSTANTIATE_TEST_SUITE_P(Server, Http10Stream,
                         ::testing::Values("GET /s HTTP/1.0\r\n\r\n",
                                           "GET /s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));

// --- write deadline -----------------------------------------------------------------------

TEST(ServerTimeouts, ClientThatNeverReadsIsCutAtTheWriteDeadline) {
  // Far more than loopback socket buffers hold, so some write must block.
  constexpr std::size_t kPieceBytes = 256 * 1024;
  constexpr int kMaxPieces = 1024;
  std::atomic<bool> finished{false};
  std::atomic<int> pieces_written{0};
  std::atomic<ErrorCode> failure{ErrorCode::kInternal};
  auto handler = [&](Request& request, ResponseWriter& writer) -> Task<void> {
    if (request.target != "/big") {
      co_await plain_ok(request, writer);
      co_return;
    }
    const std::string piece(kPieceBytes, 'x');
    Headers headers;
    Status status = co_await writer.begin_stream(200, std::move(headers));
    for (int i = 0; status.ok() && i < kMaxPieces; ++i) {
      const std::string_view data = piece;
      status = co_await writer.write_chunk(data);
      if (status.ok()) ++pieces_written;
    }
    if (!status.ok()) failure = status.error().code;
    finished = true;
  };
  ServerOptions options = quiet_options();
  options.write_timeout = kShortTimeout;
  RunningServer server(options, handler);

  RawClient stuck(server.port());
  ASSERT_TRUE(stuck.write("GET /big HTTP/1.1\r\nHost: t\r\n\r\n"));  // and never reads
  ASSERT_TRUE(eventually([&] { return finished.load(); })) << "the handler's write never gave up";
  EXPECT_EQ(failure.load(), ErrorCode::kTimeout);
  EXPECT_LT(pieces_written.load(), kMaxPieces);
  EXPECT_EQ(server->stats().timeouts, 1u);

  // Other clients are served while the stuck one is still connected.
  {
    RawClient other(server.port());
    ASSERT_TRUE(other.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto response = other.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body(), "ok 0");
  }

  // The server has closed the stuck connection: reading now drains what the socket buffers
  // held and then meets the end, short of the stream's last chunk.
  ASSERT_TRUE(stuck.wait_closed());
  EXPECT_EQ(stuck.received().rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_FALSE(stuck.received().ends_with("\r\n0\r\n\r\n"));
  EXPECT_LT(stuck.received().size(), kPieceBytes * kMaxPieces);
  stuck.close();
  EXPECT_EQ(server->stats().timeouts, 1u);
  expect_still_serving(*server);
}

// --- body deadline ------------------------------------------------------------------------

// The server's own answer to a slow body: 408 with the JSON error, Connection: close, and
// then the close itself.
void expect_408_and_close(RawClient& client, std::optional<RawResponse> response) {
  ASSERT_TRUE(response) << "no answer to a stalled body: " << client.received();
  EXPECT_EQ(response->result_int(), 408u);
  EXPECT_EQ((*response)[boost::beast::http::field::connection], "close");
  EXPECT_EQ((*response)[boost::beast::http::field::content_type], "application/json");
  EXPECT_NE(response->body().find("\"code\":408"), std::string::npos) << response->body();
  EXPECT_TRUE(client.wait_closed());
}

TEST(ServerTimeouts, StalledBodyGets408AtTheBodyDeadline) {
  ServerOptions options = quiet_options();
  options.body_timeout = kShortTimeout;
  RunningServer server(options, plain_ok);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n0123456789"));
  expect_408_and_close(client, client.read_response());
  client.close();
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.timeouts, 1u);
  EXPECT_EQ(stats.requests, 0u);  // the handler never saw the request
  EXPECT_EQ(stats.bad_requests, 0u);
  expect_still_serving(*server);
}

TEST(ServerTimeouts, TrickledBodyIsBoundedAsAWholeNotPerRead) {
  ServerOptions options = quiet_options();
  options.body_timeout = kShortTimeout;
  RunningServer server(options, plain_ok);
  RawClient client(server.port());
  ASSERT_TRUE(client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n"));
  // One byte every 10 ms keeps every read well inside the deadline; 1000 of them would not
  // be. The client stops trickling as soon as an answer arrives.
  bool answered = false;
  for (int i = 0; i < 1000 && !answered; ++i) {
    if (!client.write("b")) break;
    answered = client.read_until("\r\n\r\n", 10ms);
  }
  ASSERT_TRUE(answered || client.read_until("\r\n\r\n", 2000ms)) << "the body deadline never fired";
  EXPECT_EQ(client.received().rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u)
      << client.received();
  EXPECT_NE(client.received().find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_TRUE(client.wait_closed());
  client.close();
  EXPECT_EQ(server->stats().timeouts, 1u);
  EXPECT_EQ(server->stats().requests, 0u);
  expect_still_serving(*server);
}

}  // namespace
}  // namespace omni::http::testing
