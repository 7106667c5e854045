// The server against hostile or broken clients: every case gets its status (or a silent
// close), and afterwards the server still serves and holds no connection.
#include <gtest/gtest.h>

#include "server_test_client.hpp"

namespace omni::http::testing {
namespace {

Task<void> ok_handler(Request& request, ResponseWriter& writer) {
  Response response;
  response.body = "ok " + std::to_string(request.body.size());
  (void)co_await writer.send(std::move(response));
}

class BadInput : public ::testing::Test {
 protected:
  void start(ServerOptions options = {}) {
    options.max_header_bytes = 1024;
    options.max_body_bytes = 1024;
    options.shutdown_grace = 1s;
    server_.emplace(options, ok_handler);
  }

  std::uint16_t port() { return server_->port(); }
  ServerStats stats() { return (**server_).stats(); }

  // Sends `bytes`, expects `status` with a JSON error body, Connection: close, then a close.
  void expect_refused(std::string_view bytes, unsigned status) {
    RawClient client(port());
    ASSERT_TRUE(client.write(bytes));
    auto response = client.read_response();
    ASSERT_TRUE(response) << "no response to a request that deserves " << status;
    EXPECT_EQ(response->result_int(), status);
    EXPECT_EQ((*response)[boost::beast::http::field::connection], "close");
    EXPECT_EQ((*response)[boost::beast::http::field::content_type], "application/json");
    EXPECT_NE(response->body().find("\"code\":" + std::to_string(status)), std::string::npos)
        << response->body();
    EXPECT_TRUE(client.wait_closed());
  }

  // The server is still healthy: a normal request works and no connection is left behind.
  void expect_still_serving() {
    {
      RawClient client(port());
      ASSERT_TRUE(client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"));
      auto response = client.read_response();
      ASSERT_TRUE(response);
      EXPECT_EQ(response->result_int(), 200u);
      EXPECT_EQ(response->body(), "ok 3");
    }
    EXPECT_TRUE(eventually([&] { return stats().connections_active == 0; }))
        << stats().connections_active << " connections still open";
  }

  std::optional<RunningServer> server_;
};

TEST_F(BadInput, GarbageGets400) {
  start();
  expect_refused(std::string("\x01\x02\xff garbage\r\n\r\n", 15), 400);
  EXPECT_EQ(stats().bad_requests, 1u);
  EXPECT_EQ(stats().requests, 0u);
  expect_still_serving();
}

TEST_F(BadInput, BadRequestLineGets400) {
  start();
  expect_refused("GET /\r\nHost: t\r\n\r\n", 400);
  expect_refused("GET / HTTP/1.1 extra\r\n\r\n", 400);
  expect_refused("GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400);
  expect_still_serving();
}

TEST_F(BadInput, OversizedHeadGets431) {
  start();
  expect_refused("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n", 431);
  expect_still_serving();
}

TEST_F(BadInput, BodyAnnouncedTooLargeGets413BeforeItIsSent) {
  start();
  expect_refused("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n", 413);
  expect_still_serving();
}

TEST_F(BadInput, ChunkedBodyGrowingTooLargeGets413) {
  start();
  std::string request = "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) request += "320\r\n" + std::string(800, 'x') + "\r\n";
  request += "0\r\n\r\n";
  expect_refused(request, 413);
  EXPECT_EQ(stats().requests, 0u);
  expect_still_serving();
}

// The body arrived in the same read as the head (parsed from the buffer, no further read).
TEST_F(BadInput, MalformedChunkArrivingWithTheHeadGets400) {
  start();
  expect_refused(
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
      400);
  EXPECT_EQ(stats().requests, 0u);
  expect_still_serving();
}

TEST_F(BadInput, UnknownMethodGets501) {
  start();
  expect_refused("BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501);
  expect_still_serving();
}

TEST_F(BadInput, SlowLorisIsCutAtTheHeadDeadlineWith408) {
  ServerOptions options;
  options.header_timeout = 200ms;
  start(options);
  RawClient client(port());
  const std::string head = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: " + std::string(400, 'a');
  // One byte every 10 ms keeps every single read well inside the timeout; only the deadline
  // on the whole head can stop it. The client stops trickling as soon as an answer arrives.
  bool answered = false;
  for (char byte : head) {
    if (!client.write(std::string_view(&byte, 1))) break;
    if (client.read_until("\r\n\r\n", 10ms)) {
      answered = true;
      break;
    }
  }
  ASSERT_TRUE(answered || client.read_until("\r\n\r\n", 2000ms));
  EXPECT_EQ(client.received().rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u)
      << client.received();
  EXPECT_NE(client.received().find("Connection: close"), std::string::npos);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(stats().timeouts, 1u);
  expect_still_serving();
}

TEST_F(BadInput, IdleKeepAliveConnectionIsClosedWithoutAnAnswer) {
  ServerOptions options;
  options.idle_timeout = 200ms;
  start(options);
  RawClient client(port());
  ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(client.received(), "");  // no 408 between requests
  EXPECT_EQ(stats().timeouts, 0u);
  expect_still_serving();
}

TEST_F(BadInput, ClientLeavingMidBodyIsForgotten) {
  start();
  {
    RawClient client(port());
    ASSERT_TRUE(
        client.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly ten.."));
    ASSERT_TRUE(eventually([&] { return stats().connections_active == 1; }));
  }
  EXPECT_TRUE(eventually([&] { return stats().connections_active == 0; }));
  EXPECT_EQ(stats().requests, 0u);
  EXPECT_EQ(stats().bad_requests, 0u);
  expect_still_serving();
}

TEST_F(BadInput, ClientLeavingMidHeadIsForgotten) {
  start();
  {
    RawClient client(port());
    ASSERT_TRUE(client.write("GET / HTTP/1.1\r\nHo"));
    ASSERT_TRUE(eventually([&] { return stats().connections_active == 1; }));
  }
  EXPECT_TRUE(eventually([&] { return stats().connections_active == 0; }));
  EXPECT_EQ(stats().bad_requests, 0u);
  expect_still_serving();
}

}  // namespace
}  // namespace omni::http::testing
