// SseWriter (an event per HTTP chunk, on a ResponseWriter) and SseReader (events out of a
// ResponseStream). Both are thin: the framing lives in sse.cpp.
#include <utility>

#include "omni/http/client.hpp"
#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"

namespace omni::http {

Task<Status> SseWriter::begin(Headers extra) {
  Headers headers;
  headers.add("Content-Type", "text/event-stream");
  headers.add("Cache-Control", "no-cache");
  // nginx buffers proxied responses unless told not to; SSE must flow event by event.
  headers.add("X-Accel-Buffering", "no");
  for (const auto& [name, value] : extra) {
    if (headers.contains(name)) {
      headers.set(name, value);
    } else {
      headers.add(name, value);
    }
  }
  co_return co_await writer_.begin_stream(200, std::move(headers));
}

Task<Status> SseWriter::send(const SseEvent& event) {
  co_return co_await writer_.write_chunk(format_sse(event));
}

Task<Status> SseWriter::send_data(std::string_view data) {
  SseEvent event;
  event.data.assign(data);
  co_return co_await writer_.write_chunk(format_sse(event));
}

Task<Status> SseWriter::comment(std::string_view text) {
  std::string wire;
  wire.reserve(text.size() + 8);
  // Every line of a multi-line comment needs its own ':' or it would be read as a field.
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find_first_of("\r\n", start);
    wire += ": ";
    wire.append(text.substr(start, end == std::string_view::npos ? end : end - start));
    wire += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (text[end] == '\r' && start < text.size() && text[start] == '\n') ++start;
  }
  // The blank line keeps naive readers that split on "\n\n" from gluing the comment onto
  // the next event; for a conforming reader it dispatches nothing.
  wire += '\n';
  co_return co_await writer_.write_chunk(wire);
}

Task<Status> SseWriter::end() { co_return co_await writer_.end_stream(); }

Task<Result<std::optional<SseEvent>>> SseReader::next() {
  for (;;) {
    if (ready_pos_ < ready_.size()) {
      co_return std::optional<SseEvent>(std::move(ready_[ready_pos_++]));
    }
    ready_.clear();
    ready_pos_ = 0;
    if (ended_) co_return std::optional<SseEvent>{};
    Result<std::optional<std::string>> piece = co_await stream_.next();
    if (!piece.ok()) co_return std::move(piece).error();
    if (!piece->has_value()) {
      ended_ = true;
      if (parser_.finish()) {
        co_return make_error(ErrorCode::kProtocol, "SSE stream ended mid-event");
      }
      co_return std::optional<SseEvent>{};
    }
    Status fed = parser_.feed(**piece, ready_);
    if (!fed.ok()) {
      ended_ = true;
      co_return std::move(fed).error();
    }
  }
}

}  // namespace omni::http
