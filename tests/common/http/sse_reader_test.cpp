// SseReader: over a scripted in-memory ResponseStream (exact piece boundaries, errors) and over
// a real Client stream whose events the server splits across TCP writes.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "omni/http/client.hpp"
#include "omni/http/sse.hpp"
#include "testing/client_script_server.hpp"

namespace omni::http {
namespace {

using namespace std::chrono_literals;
using testing::ScriptConn;
using testing::ScriptServer;

// Hands out scripted body pieces (or an error), then the end.
class FakeStream final : public ResponseStream {
 public:
  explicit FakeStream(std::vector<std::string> pieces, std::optional<Error> error = {})
      : pieces_(pieces.begin(), pieces.end()), error_(std::move(error)) {}
  int status() const noexcept override { return 200; }
  const Headers& headers() const noexcept override { return headers_; }
  Task<Result<std::optional<std::string>>> next() override {
    ++pulls;
    if (!pieces_.empty()) {
      std::string piece = std::move(pieces_.front());
      pieces_.pop_front();
      co_return std::optional<std::string>(std::move(piece));
    }
    if (error_) co_return *error_;
    co_return std::optional<std::string>{};
  }
  int pulls = 0;

 private:
  std::deque<std::string> pieces_;
  std::optional<Error> error_;
  Headers headers_;
};

// Reads every event; the final Status is the error that ended the stream, if any.
Task<Status> read_all(SseReader& reader, std::vector<std::string>& data) {
  for (;;) {
    auto event = co_await reader.next();
    if (!event.ok()) co_return std::move(event).error();
    if (!event->has_value()) co_return ok_status();
    data.push_back((*event)->data);
  }
}

struct Outcome {
  std::vector<std::string> data;
  Status status;
};

Outcome read_fake(FakeStream& stream, std::size_t max_event_bytes = 1024) {
  boost::asio::io_context io;
  Outcome outcome;
  testing::run_task(io, [&]() -> Task<void> {
    SseReader reader(stream, max_event_bytes);
    outcome.status = co_await read_all(reader, outcome.data);
  }());
  return outcome;
}

TEST(SseReader, YieldsEventsAcrossPieceBoundaries) {
  FakeStream stream({"da", "ta: a\r", "\ndata: b\n", "\ndata: c\n\ndata: d\n\n"});
  Outcome outcome = read_fake(stream);
  EXPECT_TRUE(outcome.status.ok());
  EXPECT_EQ(outcome.data, (std::vector<std::string>{"a\nb", "c", "d"}));
}

TEST(SseReader, YieldsAnEventWithoutPullingMore) {
  FakeStream stream({"data: 1\n\n", "data: 2\n\n"});
  boost::asio::io_context io;
  testing::run_task(io, [&]() -> Task<void> {
    SseReader reader(stream);
    auto first = co_await reader.next();
    EXPECT_TRUE(first.ok() && first->has_value());
    EXPECT_EQ(stream.pulls, 1);  // complete after one piece: no further read was needed
  }());
}

TEST(SseReader, TruncatedStreamIsProtocolError) {
  FakeStream stream({"data: whole\n\n", "data: cut"});
  Outcome outcome = read_fake(stream);
  EXPECT_EQ(outcome.data, std::vector<std::string>{"whole"});
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.status.error().code, ErrorCode::kProtocol);
  EXPECT_NE(outcome.status.error().message.find("mid-event"), std::string::npos);
}

TEST(SseReader, StreamErrorsPassThrough) {
  FakeStream stream({"data: x\n\n"}, make_error(ErrorCode::kTimeout, "upstream: timed out"));
  Outcome outcome = read_fake(stream);
  EXPECT_EQ(outcome.data, std::vector<std::string>{"x"});
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.status.error(), make_error(ErrorCode::kTimeout, "upstream: timed out"));
}

TEST(SseReader, OversizedEventIsTooLarge) {
  FakeStream stream({"data: " + std::string(100, 'x') + "\n\n"});
  Outcome outcome = read_fake(stream, 64);
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.status.error().code, ErrorCode::kTooLarge);
}

TEST(SseReader, EmptyStreamEndsCleanly) {
  FakeStream stream({});
  Outcome outcome = read_fake(stream);
  EXPECT_TRUE(outcome.status.ok());
  EXPECT_TRUE(outcome.data.empty());
}

// The same event stream as the server writes it, cut mid-field, mid-line and mid-CRLF.
const std::vector<std::string> kWireSegments = {
    "data: {\"i\":0}\r\n\r",  // ends between CR and LF of the blank line
    "\ndata: {\"i\"",         // mid-line
    ":1}\r",                  // mid-CRLF
    "\n\r\nev",               // mid-field name
    "ent: done\r\ndata: [DONE]\r\n\r\n",
};

TEST(SseReader, OverAClientStreamSplitAcrossTcpWrites) {
  boost::asio::io_context io;
  ScriptServer server(io, [](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Transfer-Encoding: chunked\r\n\r\n");
    for (const std::string& segment : kWireSegments) {
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", segment.size());
      co_await conn.write(size + segment + "\r\n");
      co_await testing::sleep_for(2ms);  // separate TCP segments, not synchronisation
    }
    co_await conn.write("0\r\n\r\n");
    co_await conn.read_request();
  });
  Client client(io.get_executor());
  std::vector<SseEvent> events;
  testing::run_task(io, [&]() -> Task<void> {
    const Endpoint to = server.endpoint();
    Request request;  // a named local: GCC 12 mishandles `{}` temporaries in co_await
    auto opened = co_await client.open(to, std::move(request));
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    SseReader reader(**opened);
    for (;;) {
      auto event = co_await reader.next();
      EXPECT_TRUE(event.ok());
      if (!event.ok() || !event->has_value()) break;
      events.push_back(std::move(**event));
    }
  }());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].data, "{\"i\":0}");
  EXPECT_EQ(events[1].data, "{\"i\":1}");
  EXPECT_EQ(events[2].event, "done");
  EXPECT_EQ(events[2].data, "[DONE]");
  EXPECT_EQ(client.idle_connections(), 1u);
}

TEST(SseReader, OverAClientStreamCutByTheServer) {
  boost::asio::io_context io;
  ScriptServer server(io, [](ScriptConn& conn) -> Task<void> {
    if (!co_await conn.read_request()) co_return;
    co_await conn.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\ndata: one\n\ndata: tw");
    conn.close();  // a close-delimited body: a clean end of the HTTP body, mid-event
  });
  Client client(io.get_executor());
  Outcome outcome;
  testing::run_task(io, [&]() -> Task<void> {
    const Endpoint to = server.endpoint();
    Request request;  // a named local: GCC 12 mishandles `{}` temporaries in co_await
    auto opened = co_await client.open(to, std::move(request));
    EXPECT_TRUE(opened.ok());
    if (!opened.ok()) co_return;
    SseReader reader(**opened);
    outcome.status = co_await read_all(reader, outcome.data);
  }());
  EXPECT_EQ(outcome.data, std::vector<std::string>{"one"});
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.status.error().code, ErrorCode::kProtocol);
}

}  // namespace
}  // namespace omni::http
