// Access log: one JSON object per line per request, e.g.
//
//   {"ts":"2024-05-01T12:00:00.123456Z","request_id":"r-1","remote":"127.0.0.1:51234",
//    "method":"POST","path":"/v1/chat/completions","status":200,"bytes_in":512,
//    "bytes_out":9876,"duration_ms":1234.567,"upstream":"engine-0","user_agent":"curl/8"}
//
// (one line in the file). Strings are JSON-escaped by a hand-written writer: quotes,
// backslashes and control characters are escaped, valid UTF-8 passes through unchanged and
// invalid bytes become U+FFFD, so every line parses as JSON whatever the client sent.
//
// Threading: write() and flush() may be called from any number of threads. A line is
// formatted into the writer's one reusable buffer and written under a mutex, so lines never
// interleave and memory stays bounded (fields are cut at max_field_bytes).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"

namespace omni::log {

// One finished request. The strings are only read during write().
struct AccessRecord {
  // Wall-clock time the request arrived, set by the caller (so tests control it).
  std::chrono::system_clock::time_point time;
  std::string_view request_id;
  std::string_view remote;  // "ip:port" of the client
  std::string_view method;
  std::string_view path;
  int status = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  Duration duration{};  // written as duration_ms with three decimals
  // Optional: an empty value leaves the field out.
  std::string_view upstream;
  std::string_view error;
  std::string_view user_agent;
};

// Where lines go. Called with the writer's mutex held, so one call at a time.
class AccessLogSink {
 public:
  virtual ~AccessLogSink() = default;
  // `lines` is one or more whole lines, each ending in '\n'.
  virtual Status write(std::string_view lines) = 0;
};

// A caller-owned stream (tests, or any std::ostream); it must outlive the sink.
std::unique_ptr<AccessLogSink> make_stream_sink(std::ostream& stream);

struct AccessLogOptions {
  // Longer strings are cut at a UTF-8 character boundary and end in "...".
  std::size_t max_field_bytes = 4096;
  // 0: every line is written at once. Otherwise lines are batched and written when this
  // many bytes have gathered, at flush(), and at destruction; call flush() from a timer.
  std::size_t buffer_bytes = 0;
};

class AccessLogWriter {
 public:
  explicit AccessLogWriter(std::unique_ptr<AccessLogSink> sink, AccessLogOptions options = {});
  ~AccessLogWriter();  // flushes
  AccessLogWriter(const AccessLogWriter&) = delete;
  AccessLogWriter& operator=(const AccessLogWriter&) = delete;

  // Appends to `path` (created 0644 if missing). Error kIo if it cannot be opened.
  static Result<std::unique_ptr<AccessLogWriter>> open_file(const std::string& path,
                                                            AccessLogOptions options = {});
  // Writes to standard output (file descriptor 1).
  static std::unique_ptr<AccessLogWriter> to_stdout(AccessLogOptions options = {});

  // Formats and writes (or batches) one line. An error is the sink's (kIo); the line is then
  // dropped and counted in stats().
  Status write(const AccessRecord& record);
  Status flush();

  struct Stats {
    std::uint64_t lines = 0;    // accepted by write()
    std::uint64_t dropped = 0;  // lost to sink errors
  };
  Stats stats() const;

  // The JSON line for `record`, with its '\n', appended to `out` (pure; no I/O).
  static void format(const AccessRecord& record, std::size_t max_field_bytes, std::string& out);

 private:
  Status write_out();  // mu_ held

  std::unique_ptr<AccessLogSink> sink_;
  AccessLogOptions options_;
  mutable std::mutex mu_;
  std::string buffer_;
  std::size_t pending_lines_ = 0;
  Stats stats_;
};

}  // namespace omni::log
