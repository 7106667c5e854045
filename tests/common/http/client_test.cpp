// omni::http::Client against a scripted raw-socket server on loopback: framing, keep-alive
// pooling, the one safe retry, timeouts, limits, error mapping and streaming.
#include <gtest/gtest.h>

#include <boost/asio/strand.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "omni/http/client.hpp"
#include "testing/client_fixture.hpp"

namespace omni::http {
namespace {

using namespace std::chrono_literals;
using testing::ok_response;
using testing::ScriptConn;
using testing::ScriptServer;
using testing::serve_forever;
using testing::Signal;

class ClientTest : public testing::ClientFixture {
 protected:
  // The call failed with a timeout while `during` ("reading the response head", ...).
  template <class T>
  static void expect_timed_out(const Result<T>& result, std::string_view during) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ErrorCode::kTimeout);
    EXPECT_NE(result.error().message.find(std::string(during) + ": timed out"), std::string::npos)
        << result.error().message;
  }

  // Sends a GET and returns its body, or the error as "error: <code>".
  std::string get_body() {
    return get_outcome([](const Response& r) { return r.body; });
  }
};

TEST(Endpoint, ParsesHostPortAndBracketedIpv6) {
  auto named = Endpoint::parse("localhost:8080");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->host, "localhost");
  EXPECT_EQ(named->port, 8080);
  EXPECT_EQ(named->to_string(), "localhost:8080");
  auto v6 = Endpoint::parse("[::1]:8000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8000);
  EXPECT_EQ(v6->to_string(), "[::1]:8000");
  EXPECT_EQ(Endpoint::parse("10.0.0.1:65535")->port, 65535);
}

TEST(Endpoint, AcceptsAnHttpUrlWithoutAPath) {
  for (const char* text :
       {"http://localhost:8080", "http://localhost:8080/", "HTTP://localhost:8080"}) {
    auto parsed = Endpoint::parse(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, (Endpoint{"localhost", 8080})) << text;
  }
  auto v6 = Endpoint::parse("http://[::1]:8000/");
  ASSERT_TRUE(v6.ok()) << v6.error().message;
  EXPECT_EQ(*v6, (Endpoint{"::1", 8000}));
  EXPECT_EQ(v6->to_string(), "[::1]:8000");
}

TEST(Endpoint, HttpsMeansTls) {
  auto parsed = Endpoint::parse("https://engine:8443/");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, (Endpoint{"engine", 8443, /*tls=*/true}));
  EXPECT_EQ(parsed->to_string(), "engine:8443");
  EXPECT_FALSE(Endpoint::parse("http://engine:8443")->tls);
  EXPECT_FALSE(Endpoint::parse("engine:8443")->tls);
  EXPECT_NE(*parsed, *Endpoint::parse("engine:8443"));
}

TEST(Endpoint, RefusesOtherUrlsWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"ftp://engine:8443", "unsupported scheme 'ftp://'"},
      {"tcp://10.0.0.1:5557", "unsupported scheme 'tcp://'"},
      {"http://engine:8000/v1", "a path is not allowed"},
      {"http://engine", "missing port"},
      {"http://", "missing port"},
      {"http://::1:80", "brackets"},
  };
  for (const auto& [text, reason] : cases) {
    auto parsed = Endpoint::parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.error().message.find(reason), std::string::npos)
        << text << " -> " << parsed.error().message;
    // The message quotes what was written, scheme included.
    EXPECT_NE(parsed.error().message.find(std::string("'") + text + "'"), std::string::npos)
        << parsed.error().message;
  }
}

TEST(Endpoint, RejectsMalformedTextWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"localhost", "missing port"}, {"host:", "bad port"},      {"host:http", "bad port"},
      {"host:0", "bad port"},        {"host:65536", "bad port"}, {"host:80x", "bad port"},
      {":80", "empty host"},         {"[]:80", "empty host"},    {"", "missing port"},
      {"[::1]", "missing port"},     {"[::1:80", "missing ']'"}, {"::1:80", "brackets"},
  };
  for (const auto& [text, reason] : cases) {
    auto parsed = Endpoint::parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.error().message.find(reason), std::string::npos)
        << text << " -> " << parsed.error().message;
  }
}

TEST_F(ClientTest, NeedsAnIoContextExecutor) {
  const boost::asio::any_io_executor strand = boost::asio::make_strand(io_);
  EXPECT_THROW(Client(strand, ClientOptions{}), std::invalid_argument);
  const boost::asio::any_io_executor plain = io_.get_executor();
  EXPECT_NO_THROW(Client(plain, ClientOptions{}));
}

TEST_F(ClientTest, ContentLengthResponseAndRequestFraming) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (co_await conn.read_request()) {
      co_await conn.write(ok_response("hello", "X-Reply: yes\r\nX-Reply: twice\r\n"));
    }
  });
  make_client();
  run([&]() -> Task<void> {
    Request request;
    request.method = Method::kPost;
    request.target = "/v1/completions?x=1";
    request.headers.add("Content-Length", "999");  // ignored: the body decides
    request.headers.add("X-Custom", "c");
    request.body = "{\"prompt\":\"hi\"}";
    const Endpoint to = server_->endpoint();
    auto response = co_await client_->send(to, std::move(request));
    EXPECT_TRUE(response.ok()) << response.error().to_string();
    if (!response.ok()) co_return;
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "hello");
    EXPECT_EQ(response->headers.get("X-Reply").value_or(""), "yes");
    EXPECT_EQ(response->headers.size(), 3u);  // duplicates kept
  }());
  ASSERT_EQ(server_->requests.size(), 1u);
  const std::string& sent = server_->requests[0];
  EXPECT_EQ(sent.rfind("POST /v1/completions?x=1 HTTP/1.1\r\n", 0), 0u) << sent;
  EXPECT_NE(sent.find("Host: " + server_->endpoint().to_string() + "\r\n"), std::string::npos);
  EXPECT_NE(sent.find("User-Agent: omni/"), std::string::npos);
  EXPECT_NE(sent.find("Content-Length: 15\r\n"), std::string::npos) << sent;
  EXPECT_EQ(sent.find("999"), std::string::npos);
  EXPECT_NE(sent.find("X-Custom: c\r\n"), std::string::npos);
  EXPECT_TRUE(sent.ends_with("\r\n\r\n{\"prompt\":\"hi\"}"));
}

TEST_F(ClientTest, CallerHostAndUserAgentAreKept) {
  serve(serve_forever("ok"));
  make_client();
  run([&]() -> Task<void> {
    Request request;
    request.headers.add("Host", "api.example");
    request.headers.add("User-Agent", "tester/1");
    const Endpoint to = server_->endpoint();
    auto response = co_await client_->send(to, std::move(request));
    EXPECT_TRUE(response.ok());
  }());
  ASSERT_EQ(server_->requests.size(), 1u);
  EXPECT_NE(server_->requests[0].find("Host: api.example\r\n"), std::string::npos);
  EXPECT_NE(server_->requests[0].find("User-Agent: tester/1\r\n"), std::string::npos);
  EXPECT_EQ(server_->requests[0].find("omni/"), std::string::npos);
}

TEST_F(ClientTest, ChunkedBodyInSeveralWrites) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    co_await testing::sleep_for(5ms);  // separate TCP segments, not synchronisation
    co_await conn.write("5\r\nhel");
    co_await testing::sleep_for(5ms);
    co_await conn.write("lo\r\n6\r\n world\r");
    co_await testing::sleep_for(5ms);
    co_await conn.write("\n0\r\n\r\n");
    co_await conn.read_request();  // keep the connection open until the client is done
  });
  make_client();
  EXPECT_EQ(get_body(), "hello world");
  EXPECT_EQ(client_->idle_connections(), 1u);
}

TEST_F(ClientTest, CloseDelimitedBody) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil ");
    co_await testing::sleep_for(5ms);
    co_await conn.write("the end");
    conn.close();
  });
  make_client();
  EXPECT_EQ(get_body(), "until the end");
  EXPECT_EQ(client_->idle_connections(), 0u);  // it is closed, never pooled
}

TEST_F(ClientTest, KeepAliveReusesTheConnection) {
  serve(serve_forever("again"));
  make_client();
  EXPECT_EQ(get_body(), "again");
  EXPECT_EQ(client_->idle_connections(), 1u);
  EXPECT_EQ(get_body(), "again");
  EXPECT_EQ(server_->connections(), 1);
  EXPECT_EQ(server_->requests_per_connection, std::vector<int>{2});
  EXPECT_EQ(client_->idle_connections(), 1u);
  client_->close_idle();
  EXPECT_EQ(client_->idle_connections(), 0u);
  EXPECT_EQ(get_body(), "again");
  EXPECT_EQ(server_->connections(), 2);
}

TEST_F(ClientTest, ResolvesLocalhost) {
  serve(serve_forever("named"));
  make_client();
  run([&]() -> Task<void> {
    const Endpoint named{"localhost", server_->endpoint().port};
    Request request;
    auto response = co_await client_->send(named, std::move(request));
    EXPECT_TRUE(response.ok()) << response.error().to_string();
    if (response.ok()) {
      EXPECT_EQ(response->body, "named");
    }
  }());
}

TEST_F(ClientTest, PoolIsBoundedPerEndpoint) {
  serve(serve_forever("x"));
  ClientOptions options;
  options.max_idle_per_endpoint = 2;
  make_client(options);
  run([&]() -> Task<void> {
    // Three exchanges open at once need three connections.
    std::vector<std::unique_ptr<ResponseStream>> streams;
    for (int i = 0; i < 3; ++i) {
      auto stream = co_await open_get();
      EXPECT_TRUE(stream.ok());
      if (stream.ok()) streams.push_back(std::move(*stream));
    }
    for (auto& stream : streams) {
      for (;;) {
        auto piece = co_await stream->next();
        EXPECT_TRUE(piece.ok());
        if (!piece.ok() || !piece->has_value()) break;
      }
    }
  }());
  EXPECT_EQ(server_->connections(), 3);
  EXPECT_EQ(client_->idle_connections(), 2u);
}

TEST_F(ClientTest, IdleConnectionsExpire) {
  serve(serve_forever("x"));
  ClientOptions options;
  options.idle_timeout = 30ms;
  make_client(options);
  EXPECT_EQ(get_body(), "x");
  EXPECT_EQ(client_->idle_connections(), 1u);
  run(testing::sleep_for(60ms));  // longer than idle_timeout: the precondition, not a sync
  EXPECT_EQ(get_body(), "x");
  EXPECT_EQ(server_->connections(), 2);  // the expired connection was not reused
}

TEST_F(ClientTest, PooledConnectionClosedByServerIsReplaced) {
  // The server answers one request per connection, then closes while the client pools it.
  serve([](ScriptConn& conn) -> Task<void> {
    if (co_await conn.read_request()) co_await conn.write(ok_response("once"));
    conn.close();
  });
  make_client();
  EXPECT_EQ(get_body(), "once");
  EXPECT_EQ(get_body(), "once");
  EXPECT_EQ(server_->connections(), 2);
  EXPECT_EQ(server_->requests.size(), 2u);
}

TEST_F(ClientTest, StaleConnectionFailingBeforeAnyResponseByteIsRetriedOnce) {
  // The first connection serves one request, then reads the second and closes without a
  // byte: the race where a server drops an idle connection as a request arrives.
  serve([](ScriptConn& conn) -> Task<void> {
    if (conn.index == 0) {
      if (co_await conn.read_request()) co_await conn.write(ok_response("first"));
      co_await conn.read_request();
      conn.close();
      co_return;
    }
    co_await serve_forever("retried")(conn);
  });
  make_client();
  EXPECT_EQ(get_body(), "first");
  EXPECT_EQ(get_body(), "retried");
  EXPECT_EQ(server_->connections(), 2);
  EXPECT_EQ(server_->requests_per_connection, (std::vector<int>{2, 1}));
}

TEST_F(ClientTest, NoRetryOnceResponseBytesArrived) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (co_await conn.read_request()) co_await conn.write(ok_response("first"));
    if (co_await conn.read_request()) co_await conn.write("HTTP/1.1 200 OK\r\nContent-Le");
    conn.close();
  });
  make_client();
  EXPECT_EQ(get_body(), "first");
  EXPECT_EQ(get_body(), "error: protocol");
  EXPECT_EQ(server_->connections(), 1);
  EXPECT_EQ(server_->requests.size(), 2u);
}

TEST_F(ClientTest, NoRetryOnAFreshConnection) {
  serve([](ScriptConn& conn) -> Task<void> {
    co_await conn.read_request();
    conn.close();
  });
  make_client();
  EXPECT_EQ(get_body(), "error: unavailable");
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(ClientTest, ConnectionRefusedIsUnavailable) {
  std::uint16_t port = 0;
  {
    testing::tcp::acceptor probe(io_, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = probe.local_endpoint().port();
  }  // closed again: nothing listens there now
  make_client();
  run([&]() -> Task<void> {
    const Endpoint closed{"127.0.0.1", port};
    Request request;
    auto response = co_await client_->send(closed, std::move(request));
    EXPECT_FALSE(response.ok());
    if (response.ok()) co_return;
    EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
    EXPECT_NE(response.error().message.find("127.0.0.1:" + std::to_string(port)),
              std::string::npos);
    EXPECT_NE(response.error().message.find("connecting"), std::string::npos);
  }());
}

TEST_F(ClientTest, SilentServerTimesOut) {
  Signal never(io_);
  serve([&never](ScriptConn& conn) -> Task<void> {
    co_await conn.read_request();
    co_await never.wait();
  });
  ClientOptions options;
  options.read_timeout = 200ms;
  make_client(options);
  run([&]() -> Task<void> {
    auto response = co_await get();
    expect_timed_out(response, "reading the response head");
  }());
  never.set();
}

// The read timeout bounds silence, not the whole response: pieces arriving more often than
// read_timeout keep a stream alive for several times that long.
TEST_F(ClientTest, StreamWithSteadyPiecesOutlastsTheReadTimeout) {
  serve([](ScriptConn& conn) -> Task<void> {
    co_await conn.read_request();
    co_await conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 8; ++i) {
      co_await testing::sleep_for(50ms);
      co_await conn.write("1\r\nx\r\n");
    }
    co_await conn.write("0\r\n\r\n");
  });
  ClientOptions options;
  options.read_timeout = 150ms;
  make_client(options);
  run([&]() -> Task<void> {
    auto opened = co_await open_get();
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    std::string body;
    for (;;) {
      auto piece = co_await (*opened)->next();
      EXPECT_TRUE(piece.ok()) << (piece.ok() ? "" : piece.error().message);
      if (!piece.ok() || !piece->has_value()) break;
      body += **piece;
    }
    EXPECT_EQ(body, "xxxxxxxx");
  }());
}

TEST_F(ClientTest, StreamSilentMidBodyTimesOut) {
  Signal never(io_);
  serve([&never](ScriptConn& conn) -> Task<void> {
    co_await conn.read_request();
    co_await conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
    co_await never.wait();
  });
  ClientOptions options;
  options.read_timeout = 150ms;
  make_client(options);
  run([&]() -> Task<void> {
    auto opened = co_await open_get();
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    auto first = co_await (*opened)->next();
    EXPECT_TRUE(first.ok() && first->has_value());
    auto second = co_await (*opened)->next();
    expect_timed_out(second, "reading the response body");
  }());
  never.set();
}

// With keep_timers_armed, a pooled connection's timer wait carries over to its next request
// (armed for the first request's write deadline): it must still bound that request's read.
TEST_F(ClientTest, KeptTimersStillBoundTheNextRequest) {
  Signal never(io_);
  serve([&never](ScriptConn& conn) -> Task<void> {
    co_await conn.read_request();
    co_await conn.write(ok_response("first"));
    co_await conn.read_request();
    co_await never.wait();
  });
  ClientOptions options;
  options.keep_timers_armed = true;
  options.write_timeout = 100ms;
  options.read_timeout = 300ms;
  make_client(options);
  run([&]() -> Task<void> {
    auto first = co_await get();
    EXPECT_TRUE(first.ok() && first->body == "first");
    EXPECT_EQ(client_->idle_connections(), 1u);
    const auto started = std::chrono::steady_clock::now();
    auto second = co_await get();
    expect_timed_out(second, "reading the response head");
    EXPECT_GE(std::chrono::steady_clock::now() - started, 300ms);  // the read's, not the write's
  }());
  never.set();
  client_.reset();  // cancels the pooled connection's pending wait
}

// A server that never reads: the request fills the socket buffers and the write times out.
TEST_F(ClientTest, ServerNotReadingMakesTheWriteTimeOut) {
  Signal never(io_);
  serve([&never](ScriptConn&) -> Task<void> { co_await never.wait(); });
  ClientOptions options;
  options.write_timeout = 200ms;
  make_client(options);
  run([&]() -> Task<void> {
    Request request;
    request.method = Method::kPost;
    request.body.assign(64u << 20, 'x');  // more than loopback's socket buffers hold
    const Endpoint to = server_->endpoint();
    auto response = co_await client_->send(to, std::move(request));
    expect_timed_out(response, "writing the request");
  }());
  never.set();
}

TEST_F(ClientTest, MalformedStatusLineIsProtocolError) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (co_await conn.read_request()) co_await conn.write("HTTB/1.1 200 OK\r\n\r\n");
    co_await conn.read_request();
  });
  make_client();
  EXPECT_EQ(get_body(), "error: protocol");
}

TEST_F(ClientTest, BodyOverTheLimitIsTooLarge) {
  serve([](ScriptConn& conn) -> Task<void> {
    while (auto request = co_await conn.read_request()) {
      if (request->starts_with("GET /announced")) {
        co_await conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
      } else {
        co_await conn.write(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "8\r\n01234567\r\n8\r\n01234567\r\n0\r\n\r\n");
      }
    }
  });
  ClientOptions options;
  options.max_body_bytes = 10;
  make_client(options);
  run([&]() -> Task<void> {
    for (const char* target : {"/announced", "/chunked"}) {
      auto response = co_await get(target);
      EXPECT_FALSE(response.ok()) << target;
      if (!response.ok()) {
        EXPECT_EQ(response.error().code, ErrorCode::kTooLarge) << target;
      }
    }
  }());
}

TEST_F(ClientTest, HeadOverTheLimitIsTooLarge) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (co_await conn.read_request()) {
      co_await conn.write("HTTP/1.1 200 OK\r\nX-Big: " + std::string(2000, 'b') + "\r\n\r\n");
    }
    co_await conn.read_request();
  });
  ClientOptions options;
  options.max_header_bytes = 512;
  make_client(options);
  EXPECT_EQ(get_body(), "error: too_large");
}

TEST_F(ClientTest, HeadRequestHasNoBodyAndKeepsTheConnection) {
  serve([](ScriptConn& conn) -> Task<void> {
    while (auto request = co_await conn.read_request()) {
      if (request->starts_with("HEAD")) {
        co_await conn.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
      } else {
        co_await conn.write(ok_response("after"));
      }
    }
  });
  make_client();
  run([&]() -> Task<void> {
    Request head;
    head.method = Method::kHead;
    const Endpoint to = server_->endpoint();
    auto response = co_await client_->send(to, std::move(head));
    EXPECT_TRUE(response.ok());
    if (response.ok()) {
      EXPECT_EQ(response->body, "");
    }
  }());
  EXPECT_EQ(get_body(), "after");
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(ClientTest, InvalidRequestsAreRejectedBeforeSending) {
  serve(serve_forever("x"));
  make_client();
  run([&]() -> Task<void> {
    Request unknown;
    unknown.method = Method::kUnknown;
    Request injected;
    injected.headers.add("X-Evil", "a\r\nX-Injected: 1");
    Request bad_name;
    bad_name.headers.add("Bad Name", "v");
    for (Request* request : {&unknown, &injected, &bad_name}) {
      const Endpoint to = server_->endpoint();
      auto response = co_await client_->send(to, std::move(*request));
      EXPECT_FALSE(response.ok());
      if (!response.ok()) {
        EXPECT_EQ(response.error().code, ErrorCode::kInvalidArgument);
      }
    }
  }());
  EXPECT_EQ(server_->connections(), 0);
}

TEST_F(ClientTest, OpenReturnsTheFirstPieceBeforeTheRestIsSent) {
  Signal go_on(io_);
  serve([&go_on](ScriptConn& conn) -> Task<void> {
    while (co_await conn.read_request()) {
      co_await conn.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst \r\n");
      co_await go_on.wait();
      co_await conn.write("6\r\nsecond\r\n0\r\n\r\n");
    }
  });
  make_client();
  run([&]() -> Task<void> {
    auto opened = co_await open_get();
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    ResponseStream& stream = **opened;
    EXPECT_EQ(stream.status(), 200);
    EXPECT_EQ(stream.headers().get("Transfer-Encoding").value_or(""), "chunked");
    auto first = co_await stream.next();
    EXPECT_TRUE(first.ok() && first->has_value());
    if (first.ok() && first->has_value()) {
      EXPECT_EQ(**first, "first ");
    }
    go_on.set();  // only now may the server send the rest
    std::string rest;
    for (;;) {
      auto piece = co_await stream.next();
      EXPECT_TRUE(piece.ok());
      if (!piece.ok() || !piece->has_value()) break;
      rest += **piece;
    }
    EXPECT_EQ(rest, "second");
    EXPECT_EQ(client_->idle_connections(), 1u);  // read to the end: back in the pool
    auto after_end = co_await stream.next();
    EXPECT_TRUE(after_end.ok() && !after_end->has_value());
  }());
}

TEST_F(ClientTest, StreamDestroyedEarlyClosesTheConnection) {
  Signal go_on(io_);
  bool saw_close = false;
  serve([&](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome");
    saw_close = co_await conn.peer_closed();
  });
  make_client();
  run([&]() -> Task<void> {
    auto opened = co_await open_get();
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    auto piece = co_await (*opened)->next();
    EXPECT_TRUE(piece.ok() && piece->has_value());
  }());  // the stream dies here, mid-body
  testing::run_until(io_, [&] { return saw_close; });
  EXPECT_EQ(client_->idle_connections(), 0u);
}

TEST_F(ClientTest, StreamOutlivesItsClient) {
  Signal go_on(io_);
  serve([&go_on](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234");
    co_await go_on.wait();
    co_await conn.write("56789");
    co_await conn.read_request();
  });
  make_client();
  run([&]() -> Task<void> {
    auto opened = co_await open_get();
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    std::unique_ptr<ResponseStream> stream = std::move(*opened);
    client_.reset();  // the Client goes; its stream must keep working
    go_on.set();
    std::string body;
    for (;;) {
      auto piece = co_await stream->next();
      EXPECT_TRUE(piece.ok());
      if (!piece.ok() || !piece->has_value()) break;
      body += **piece;
    }
    EXPECT_EQ(body, "0123456789");
  }());
}

TEST_F(ClientTest, StreamErrorMidBodyIsReportedOnce) {
  serve([](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
    conn.close();
  });
  make_client();
  run([&]() -> Task<void> {
    auto opened = co_await open_get();
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    std::string body;
    Result<std::optional<std::string>> piece = std::optional<std::string>{};
    for (;;) {
      piece = co_await (*opened)->next();
      if (!piece.ok() || !piece->has_value()) break;
      body += **piece;
    }
    EXPECT_EQ(body, "partial");
    EXPECT_FALSE(piece.ok());
    if (!piece.ok()) {
      EXPECT_EQ(piece.error().code, ErrorCode::kProtocol);
    }
    auto again = co_await (*opened)->next();
    EXPECT_FALSE(again.ok());
  }());
  EXPECT_EQ(client_->idle_connections(), 0u);
}

}  // namespace
}  // namespace omni::http
