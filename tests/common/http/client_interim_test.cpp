// omni::http::Client and interim (1xx) responses: send() and open() skip 100 Continue,
// 103 Early Hints and the like and return the final response; the number skipped is bounded;
// 101 Switching Protocols is final, and its connection is never pooled.
#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <string>

#include "omni/http/client.hpp"
#include "testing/client_fixture.hpp"

namespace omni::http {
namespace {

using namespace std::chrono_literals;
using testing::ok_response;
using testing::ScriptConn;
using testing::ScriptServer;
using testing::Signal;

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::string_view kEarlyHints =
    "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";

// Answers every request on the connection with `interim` and then a 200 carrying `body`.
ScriptServer::Script interim_then_ok(std::string interim, std::string body) {
  return [interim, body](ScriptConn& conn) -> Task<void> {
    while (co_await conn.read_request()) {
      const std::string reply = interim + ok_response(body, "X-Final: yes\r\n");
      if (!co_await conn.write(reply)) co_return;
    }
  };
}

std::string repeated(std::string_view text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

class ClientInterimTest : public testing::ClientFixture {
 protected:
  // The response's status and body ("<status> <body>"), or "error: <code>".
  std::string get_outcome() {
    return ClientFixture::get_outcome(
        [](const Response& r) { return std::to_string(r.status) + " " + r.body; });
  }
};

TEST_F(ClientInterimTest, SendSkipsInterimResponsesAndReturnsTheFinalOne) {
  serve(interim_then_ok(std::string(kContinue) + std::string(kEarlyHints), "final"));
  make_client();
  run([&]() -> Task<void> {
    auto response = co_await get();
    EXPECT_TRUE(response.ok()) << response.error().to_string();
    if (!response.ok()) co_return;
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "final");
    EXPECT_EQ(response->headers.get("X-Final").value_or(""), "yes");
    EXPECT_FALSE(response->headers.contains("Link"));  // the final response's headers only
  }());
  // The exchange ended cleanly: the connection is pooled and carries the next request.
  EXPECT_EQ(client_->idle_connections(), 1u);
  EXPECT_EQ(get_outcome(), "200 final");
  EXPECT_EQ(server_->connections(), 1);
  EXPECT_EQ(server_->requests.size(), 2u);
}

TEST_F(ClientInterimTest, InterimAndFinalHeadsInSeparateWrites) {
  Signal go_on(io_);
  serve([&go_on](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write(kEarlyHints);
    co_await go_on.wait();
    co_await conn.write("HTTP/1.1 200 OK\r\nContent-Le");
    co_await conn.write("ngth: 4\r\n\r\ndone");
  });
  make_client();
  std::string outcome;
  bool finished = false;
  run([&]() -> Task<void> {
    // Let the client read the interim head alone before the final one exists.
    boost::asio::co_spawn(io_, testing::sleep_for(20ms), [&](std::exception_ptr) { go_on.set(); });
    auto response = co_await get();
    outcome = response.ok() ? std::to_string(response->status) + " " + response->body
                            : response.error().to_string();
    finished = true;
  }());
  EXPECT_TRUE(finished);
  EXPECT_EQ(outcome, "200 done");
}

TEST_F(ClientInterimTest, OpenSkipsInterimResponsesAndStreamsTheFinalBody) {
  serve([](ScriptConn& conn) -> Task<void> {
    while (co_await conn.read_request()) {
      const std::string reply = std::string(kEarlyHints) +
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
      if (!co_await conn.write(reply)) co_return;
    }
  });
  make_client();
  run([&]() -> Task<void> {
    Request request;
    const Endpoint to = server_->endpoint();
    auto opened = co_await client_->open(to, std::move(request));
    EXPECT_TRUE(opened.ok()) << opened.error().to_string();
    if (!opened.ok()) co_return;
    ResponseStream& stream = **opened;
    EXPECT_EQ(stream.status(), 200);
    EXPECT_FALSE(stream.headers().contains("Link"));
    std::string body;
    for (;;) {
      auto piece = co_await stream.next();
      EXPECT_TRUE(piece.ok());
      if (!piece.ok() || !piece->has_value()) break;
      body += **piece;
    }
    EXPECT_EQ(body, "hello world");
  }());
  EXPECT_EQ(client_->idle_connections(), 1u);
}

TEST_F(ClientInterimTest, EightInterimResponsesAreSkipped) {
  serve(interim_then_ok(repeated(kContinue, 8), "eight"));
  make_client();
  EXPECT_EQ(get_outcome(), "200 eight");
}

TEST_F(ClientInterimTest, ANinthInterimResponseIsAProtocolError) {
  serve(interim_then_ok(repeated(kEarlyHints, 9), "never"));
  make_client();
  EXPECT_EQ(get_outcome(), "error: protocol");
  EXPECT_EQ(client_->idle_connections(), 0u);  // a connection in an unknown state is dropped
}

TEST_F(ClientInterimTest, NoRetryAfterAnInterimResponse) {
  // The pooled connection's second request gets an interim response and then a close: the
  // server has seen that request, so resending it elsewhere would not be safe.
  serve([](ScriptConn& conn) -> Task<void> {
    if (co_await conn.read_request()) co_await conn.write(ok_response("first"));
    if (co_await conn.read_request()) co_await conn.write(kEarlyHints);
    conn.close();
  });
  make_client();
  EXPECT_EQ(get_outcome(), "200 first");
  EXPECT_EQ(get_outcome(), "error: unavailable");
  EXPECT_EQ(server_->connections(), 1);
  EXPECT_EQ(server_->requests.size(), 2u);
}

TEST_F(ClientInterimTest, SwitchingProtocolsIsFinalAndItsConnectionIsNotPooled) {
  serve([](ScriptConn& conn) -> Task<void> {
    while (co_await conn.read_request()) {
      if (!co_await conn.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                               "Upgrade: other\r\n\r\n")) {
        co_return;
      }
    }
  });
  make_client();
  EXPECT_EQ(get_outcome(), "101 ");
  EXPECT_EQ(client_->idle_connections(), 0u);
  EXPECT_EQ(get_outcome(), "101 ");
  EXPECT_EQ(server_->connections(), 2);
}

}  // namespace
}  // namespace omni::http
