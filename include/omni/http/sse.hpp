// Server-sent events (text/event-stream), both directions.
//
//   SseWriter — server side: each event becomes one HTTP chunk, flushed immediately.
//   SseParser — pure, incremental: bytes in any split (a TCP read may end mid-line, mid-CRLF
//               or mid-UTF-8) → complete events, following the WHATWG parsing rules.
//   SseReader — client side: pulls a ResponseStream and yields events as they arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/http/task.hpp"
#include "omni/http/types.hpp"

namespace omni::http {

class ResponseWriter;
class ResponseStream;

struct SseEvent {
  std::string event;  // empty: the default "message" type, no "event:" line written
  std::string data;   // multi-line data is written as several "data:" lines
  std::string id;     // empty: no "id:" line
  std::optional<std::uint32_t> retry;
  friend bool operator==(const SseEvent&, const SseEvent&) = default;
};

// The wire form of one event, ending with the blank line: "data: {...}\n\n".
std::string format_sse(const SseEvent& event);

class SseParser {
 public:
  explicit SseParser(std::size_t max_event_bytes = 4 * 1024 * 1024)
      : max_event_bytes_(max_event_bytes) {}
  // Appends every event completed by `bytes` to `out`. kTooLarge when one event (or one
  // line) exceeds max_event_bytes; the parser is then unusable.
  Status feed(std::string_view bytes, std::vector<SseEvent>& out);
  // End of stream: an unterminated event is discarded, as the spec says. Returns whether
  // there was one (useful to flag truncated streams).
  bool finish() noexcept;
  const std::string& last_event_id() const noexcept { return last_id_; }

 private:
  void process_line(std::string_view line, std::vector<SseEvent>& out);

  std::size_t max_event_bytes_;
  std::string line_;      // the current, incomplete line
  bool skip_lf_ = false;  // the previous chunk ended with CR; a leading LF belongs to it
  bool bom_checked_ = false;
  SseEvent pending_;
  bool has_data_ = false;
  std::size_t pending_bytes_ = 0;
  std::string last_id_;
  bool failed_ = false;
};

class SseWriter {
 public:
  explicit SseWriter(ResponseWriter& writer) : writer_(writer) {}
  // 200 with Content-Type text/event-stream, Cache-Control no-cache, plus `extra`.
  Task<Status> begin(Headers extra = {});
  Task<Status> send(const SseEvent& event);
  // Shorthand for an event with only data: "data: <data>\n\n".
  Task<Status> send_data(std::string_view data);
  // A comment line (": text"), e.g. a keep-alive heartbeat.
  Task<Status> comment(std::string_view text);
  Task<Status> end();

 private:
  ResponseWriter& writer_;
};

class SseReader {
 public:
  explicit SseReader(ResponseStream& stream, std::size_t max_event_bytes = 4 * 1024 * 1024)
      : stream_(stream), parser_(max_event_bytes) {}
  // The next event as soon as it is complete; std::nullopt at the end of the stream.
  // kProtocol if the stream ends in the middle of an event.
  Task<Result<std::optional<SseEvent>>> next();

 private:
  ResponseStream& stream_;
  SseParser parser_;
  std::vector<SseEvent> ready_;
  std::size_t ready_pos_ = 0;
  bool ended_ = false;
};

}  // namespace omni::http
