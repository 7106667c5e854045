// format_sse, the incremental SseParser (WHATWG rules, any split of the input) and SseWriter
// against a recording fake ResponseWriter.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <string>
#include <vector>

#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"

namespace omni::http {
namespace {

SseEvent data_event(std::string data) {
  SseEvent event;
  event.data = std::move(data);
  return event;
}

// Feeds `wire` in one piece and returns the events; fails the test on a parse error.
std::vector<SseEvent> parse_all(std::string_view wire, SseParser& parser) {
  std::vector<SseEvent> events;
  Status status = parser.feed(wire, events);
  EXPECT_TRUE(status.ok()) << status.error().to_string();
  return events;
}

std::vector<SseEvent> parse_all(std::string_view wire) {
  SseParser parser;
  return parse_all(wire, parser);
}

TEST(FormatSse, DataOnlyEvent) {
  EXPECT_EQ(format_sse(data_event("{\"a\":1}")), "data: {\"a\":1}\n\n");
}

TEST(FormatSse, AllFieldsInOrder) {
  SseEvent event;
  event.event = "update";
  event.id = "42";
  event.retry = 1500;
  event.data = "x";
  EXPECT_EQ(format_sse(event), "event: update\nid: 42\nretry: 1500\ndata: x\n\n");
}

TEST(FormatSse, MultiLineDataBecomesSeveralDataLines) {
  EXPECT_EQ(format_sse(data_event("a\nb\n")), "data: a\ndata: b\ndata: \n\n");
}

TEST(FormatSse, CarriageReturnsCannotBreakTheFraming) {
  EXPECT_EQ(format_sse(data_event("a\r\nb\rc")), "data: a\ndata: b\ndata: c\n\n");
  SseEvent event = data_event("x");
  event.event = "ev\r\ndata: forged";
  event.id = "1\n2";
  EXPECT_EQ(format_sse(event), "event: evdata: forged\nid: 12\ndata: x\n\n");
}

TEST(FormatSse, EmptyDataIsStillAnEvent) {
  EXPECT_EQ(format_sse(SseEvent{}), "data: \n\n");
  EXPECT_EQ(parse_all(format_sse(SseEvent{})), std::vector<SseEvent>{SseEvent{}});
}

TEST(FormatSse, RoundTripsThroughTheParser) {
  SseEvent event;
  event.event = "delta";
  event.id = "7";
  event.retry = 3;
  event.data = " leading space\n\nline: with colon\n";
  EXPECT_EQ(parse_all(format_sse(event)), std::vector<SseEvent>{event});
}

TEST(SseParser, DispatchesOnBlankLineOnly) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: one\n", events).ok());
  EXPECT_TRUE(events.empty());
  ASSERT_TRUE(parser.feed("\n", events).ok());
  EXPECT_EQ(events, std::vector<SseEvent>{data_event("one")});
}

TEST(SseParser, AcceptsEveryLineEnding) {
  const auto expected = std::vector<SseEvent>{data_event("a\nb"), data_event("c")};
  EXPECT_EQ(parse_all("data: a\ndata: b\n\ndata: c\n\n"), expected);
  EXPECT_EQ(parse_all("data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"), expected);
  EXPECT_EQ(parse_all("data: a\rdata: b\r\rdata: c\r\r"), expected);
  EXPECT_EQ(parse_all("data: a\r\ndata: b\r\rdata: c\n\r\n"), expected);
}

TEST(SseParser, FieldSyntax) {
  // One leading space is stripped, not two; no colon means an empty value.
  EXPECT_EQ(parse_all("data:x\n\n"), std::vector<SseEvent>{data_event("x")});
  EXPECT_EQ(parse_all("data:  x\n\n"), std::vector<SseEvent>{data_event(" x")});
  EXPECT_EQ(parse_all("data\n\n"), std::vector<SseEvent>{data_event("")});
  EXPECT_EQ(parse_all("data\ndata\n\n"), std::vector<SseEvent>{data_event("\n")});
  EXPECT_EQ(parse_all("data: a:b: c\n\n"), std::vector<SseEvent>{data_event("a:b: c")});
}

TEST(SseParser, IgnoresCommentsAndUnknownFields) {
  EXPECT_EQ(parse_all(": ping\n\nfoo: bar\nData: no\ndata: yes\n: mid\n\n"),
            std::vector<SseEvent>{data_event("yes")});
}

TEST(SseParser, EventWithoutDataIsNotDispatchedAndTypeResets) {
  // The event type of a data-less block must not leak into the next event.
  EXPECT_EQ(parse_all("event: lonely\n\ndata: x\n\n"), std::vector<SseEvent>{data_event("x")});
}

TEST(SseParser, EventIdAndRetry) {
  SseParser parser;
  auto events = parse_all("event: e\nid: 5\nretry: 250\ndata: d\n\ndata: next\n\n", parser);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "e");
  EXPECT_EQ(events[0].id, "5");
  EXPECT_EQ(events[0].retry, 250u);
  EXPECT_EQ(events[1], data_event("next"));  // fields other than the last id do not persist
  EXPECT_EQ(parser.last_event_id(), "5");
}

TEST(SseParser, IdWithNulIsIgnored) {
  SseParser parser;
  constexpr char kWire[] = "id: 1\n\nid: a\0b\ndata: x\n\n";
  auto events = parse_all(std::string_view(kWire, sizeof(kWire) - 1), parser);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, "");
  EXPECT_EQ(parser.last_event_id(), "1");
}

TEST(SseParser, EmptyIdResetsLastEventId) {
  SseParser parser;
  parse_all("id: 9\ndata: a\n\nid\ndata: b\n\n", parser);
  EXPECT_EQ(parser.last_event_id(), "");
}

TEST(SseParser, RetryMustBeAllDigits) {
  for (const char* wire :
       {"retry: 12a\ndata: x\n\n", "retry: -1\ndata: x\n\n", "retry:\ndata: x\n\n",
        "retry:  5\ndata: x\n\n", "retry: 99999999999\ndata: x\n\n"}) {
    auto events = parse_all(wire);
    ASSERT_EQ(events.size(), 1u) << wire;
    EXPECT_FALSE(events[0].retry.has_value()) << wire;
  }
}

TEST(SseParser, LeadingBomIsIgnoredOnlyAtStreamStart) {
  EXPECT_EQ(parse_all("\xEF\xBB\xBF"
                      "data: x\n\n"),
            std::vector<SseEvent>{data_event("x")});
  // A BOM split across reads is still a BOM.
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("\xEF", events).ok());
  ASSERT_TRUE(parser.feed("\xBB", events).ok());
  ASSERT_TRUE(parser
                  .feed("\xBF"
                        "data: y\n\n",
                        events)
                  .ok());
  EXPECT_EQ(events, std::vector<SseEvent>{data_event("y")});
  // Later on it is ordinary bytes: here part of an unknown field name, so ignored.
  ASSERT_TRUE(parser
                  .feed("\xEF\xBB\xBF"
                        "data: z\n\n",
                        events)
                  .ok());
  EXPECT_EQ(events.size(), 1u);
  // Not a BOM after all: the bytes belong to the first line.
  EXPECT_TRUE(parse_all("\xEF\xBB"
                        "data: x\n\n")
                  .empty());
}

// The stream a relay sees: every feature, every line ending, multi-byte UTF-8, a comment.
const std::string kMixedStream =
    "\xEF\xBB\xBF: hello\r\n"
    "data: {\"token\":\"h\xC3\xA9llo\"}\n\n"
    "event: delta\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\n"
    "retry: 10\rdata:no-space\r\r"
    "data\n\n"
    ": keep-alive\n\n"
    "id: 2\ndata: \xE2\x82\xAC tail\n\n";

std::vector<SseEvent> mixed_stream_events() {
  SseEvent delta;
  delta.event = "delta";
  delta.id = "1";
  delta.data = "a\nb";
  SseEvent retried = data_event("no-space");
  retried.retry = 10;
  SseEvent last = data_event("\xE2\x82\xAC tail");
  last.id = "2";
  return {data_event("{\"token\":\"h\xC3\xA9llo\"}"), delta, retried, data_event(""), last};
}

TEST(SseParser, WholeMixedStream) { EXPECT_EQ(parse_all(kMixedStream), mixed_stream_events()); }

TEST(SseParser, IdenticalEventsForEverySplitPosition) {
  const auto expected = mixed_stream_events();
  for (std::size_t cut = 0; cut <= kMixedStream.size(); ++cut) {
    SseParser parser;
    std::vector<SseEvent> events;
    ASSERT_TRUE(parser.feed(std::string_view(kMixedStream).substr(0, cut), events).ok());
    ASSERT_TRUE(parser.feed(std::string_view(kMixedStream).substr(cut), events).ok());
    EXPECT_EQ(events, expected) << "split at " << cut;
    EXPECT_FALSE(parser.finish()) << "split at " << cut;
  }
}

TEST(SseParser, IdenticalEventsForEveryPairOfSplits) {
  const auto expected = mixed_stream_events();
  const std::string_view wire = kMixedStream;
  for (std::size_t a = 0; a <= wire.size(); ++a) {
    for (std::size_t b = a; b <= wire.size(); ++b) {
      SseParser parser;
      std::vector<SseEvent> events;
      ASSERT_TRUE(parser.feed(wire.substr(0, a), events).ok());
      ASSERT_TRUE(parser.feed(wire.substr(a, b - a), events).ok());
      ASSERT_TRUE(parser.feed(wire.substr(b), events).ok());
      ASSERT_EQ(events, expected) << "splits at " << a << " and " << b;
    }
  }
}

TEST(SseParser, ByteByByte) {
  SseParser parser;
  std::vector<SseEvent> events;
  for (char c : kMixedStream) ASSERT_TRUE(parser.feed(std::string_view(&c, 1), events).ok());
  EXPECT_EQ(events, mixed_stream_events());
  EXPECT_EQ(parser.last_event_id(), "2");
}

TEST(SseParser, CrAtChunkEndFollowedByLfIsOneLineEnd) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: a\r", events).ok());
  ASSERT_TRUE(parser.feed("\ndata: b\r", events).ok());
  ASSERT_TRUE(parser.feed("\n\r", events).ok());
  ASSERT_TRUE(parser.feed("\n", events).ok());
  EXPECT_EQ(events, std::vector<SseEvent>{data_event("a\nb")});
}

TEST(SseParser, FinishReportsAnUnterminatedEvent) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: done\n\ndata: partial\n", events).ok());
  EXPECT_EQ(events.size(), 1u);
  EXPECT_TRUE(parser.finish());
  SseParser half_line;
  ASSERT_TRUE(half_line.feed("data: no newline", events).ok());
  EXPECT_TRUE(half_line.finish());
  SseParser clean;
  ASSERT_TRUE(clean.feed("data: x\n\n", events).ok());
  EXPECT_FALSE(clean.finish());
  EXPECT_EQ(events.size(), 2u);  // the unterminated events were discarded
}

TEST(SseParser, LineLongerThanTheLimitIsTooLarge) {
  SseParser parser(16);
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: 0123456789\n\n", events).ok());  // exactly 16
  Status status = parser.feed("data: 01234567890", events);       // 17, still unterminated
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kTooLarge);
  // The parser stays failed.
  EXPECT_EQ(parser.feed("\n\n", events).error().code, ErrorCode::kTooLarge);
  EXPECT_EQ(events.size(), 1u);
}

TEST(SseParser, LongLineSplitAcrossFeedsIsTooLarge) {
  SseParser parser(32);
  std::vector<SseEvent> events;
  Status status = ok_status();
  for (int i = 0; i < 10 && status.ok(); ++i) status = parser.feed("data: abcdef", events);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kTooLarge);
}

TEST(SseParser, EventLargerThanTheLimitIsTooLarge) {
  SseParser parser(32);
  std::vector<SseEvent> events;
  Status status = ok_status();
  for (int i = 0; i < 10 && status.ok(); ++i) status = parser.feed("data: abcdefgh\n", events);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kTooLarge);
  EXPECT_TRUE(events.empty());
}

TEST(SseParser, CommentsDoNotCountTowardsTheEventLimit) {
  SseParser parser(32);
  std::vector<SseEvent> events;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(parser.feed(": heartbeat heartbeat\n", events).ok());
  ASSERT_TRUE(parser.feed("data: x\n\n", events).ok());
  EXPECT_EQ(events, std::vector<SseEvent>{data_event("x")});
}

// Records what SseWriter asks of the HTTP layer.
class RecordingWriter final : public ResponseWriter {
 public:
  Task<Status> send(Response) override {
    ++sends;
    co_return ok_status();
  }
  Task<Status> begin_stream(int status_code, Headers headers) override {
    status = status_code;
    head = std::move(headers);
    co_return ok_status();
  }
  Task<Status> write_chunk(std::string_view data) override {
    if (fail_writes) co_return make_error(ErrorCode::kUnavailable, "client gone");
    chunks.emplace_back(data);
    co_return ok_status();
  }
  Task<Status> end_stream() override {
    ended = true;
    co_return ok_status();
  }
  bool started() const noexcept override { return status != 0; }

  int status = 0;
  Headers head;
  std::vector<std::string> chunks;
  int sends = 0;
  bool ended = false;
  bool fail_writes = false;
};

void run(Task<void> task) {
  boost::asio::io_context io;
  std::exception_ptr failure;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
}

TEST(SseWriter, WritesHeadersAndOneChunkPerEvent) {
  RecordingWriter writer;
  run([&]() -> Task<void> {
    SseWriter sse(writer);
    Headers extra;
    extra.add("X-Request-Id", "r1");
    extra.add("Cache-Control", "no-store");
    EXPECT_TRUE((co_await sse.begin(std::move(extra))).ok());
    SseEvent event = data_event("line1\nline2");
    event.event = "delta";
    EXPECT_TRUE((co_await sse.send(event)).ok());
    EXPECT_TRUE((co_await sse.send_data("[DONE]")).ok());
    EXPECT_TRUE((co_await sse.comment("ping")).ok());
    EXPECT_TRUE((co_await sse.end()).ok());
  }());
  EXPECT_EQ(writer.status, 200);
  EXPECT_EQ(writer.head.get("Content-Type").value_or(""), "text/event-stream");
  EXPECT_EQ(writer.head.get("Cache-Control").value_or(""), "no-store");  // extra overrides
  EXPECT_EQ(writer.head.get("X-Accel-Buffering").value_or(""), "no");
  EXPECT_EQ(writer.head.get("X-Request-Id").value_or(""), "r1");
  EXPECT_EQ(writer.chunks, (std::vector<std::string>{"event: delta\ndata: line1\ndata: line2\n\n",
                                                     "data: [DONE]\n\n", ": ping\n\n"}));
  EXPECT_TRUE(writer.ended);
  EXPECT_EQ(writer.sends, 0);
}

TEST(SseWriter, MultiLineCommentStaysAComment) {
  RecordingWriter writer;
  run([&]() -> Task<void> {
    EXPECT_TRUE((co_await SseWriter(writer).comment("a\r\ndata: b")).ok());
  }());
  ASSERT_EQ(writer.chunks.size(), 1u);
  EXPECT_EQ(writer.chunks[0], ": a\n: data: b\n\n");
  EXPECT_TRUE(parse_all(writer.chunks[0]).empty());
}

TEST(SseWriter, PassesWriteErrorsThrough) {
  RecordingWriter writer;
  writer.fail_writes = true;
  run([&]() -> Task<void> {
    Status status = co_await SseWriter(writer).send_data("x");
    EXPECT_FALSE(status.ok());
    if (!status.ok()) {
      EXPECT_EQ(status.error().code, ErrorCode::kUnavailable);
    }
  }());
}

}  // namespace
}  // namespace omni::http
