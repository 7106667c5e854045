#include "omni/log/access_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <ostream>
#include <system_error>

#include "omni/common/json_text.hpp"

namespace omni::log {
namespace {

// Writes to a file descriptor; whole buffers, retrying short writes and EINTR.
class FdSink final : public AccessLogSink {
 public:
  FdSink(int fd, bool owned) : fd_(fd), owned_(owned) {}
  ~FdSink() override {
    if (owned_) ::close(fd_);
  }
  FdSink(const FdSink&) = delete;
  FdSink& operator=(const FdSink&) = delete;

  Status write(std::string_view lines) override {
    while (!lines.empty()) {
      const ssize_t n = ::write(fd_, lines.data(), lines.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return make_error(ErrorCode::kIo,
                          "access log write: " + std::generic_category().message(errno));
      }
      lines.remove_prefix(static_cast<std::size_t>(n));
    }
    return ok_status();
  }

 private:
  int fd_;
  bool owned_;
};

class StreamSink final : public AccessLogSink {
 public:
  explicit StreamSink(std::ostream& stream) : stream_(stream) {}
  Status write(std::string_view lines) override {
    stream_.write(lines.data(), static_cast<std::streamsize>(lines.size()));
    stream_.flush();
    if (!stream_) return make_error(ErrorCode::kIo, "access log stream write failed");
    return ok_status();
  }

 private:
  std::ostream& stream_;
};

// Cuts at a character boundary so a long field never ends in half a UTF-8 sequence.
std::string_view cut(std::string_view text, std::size_t max_bytes, bool& was_cut) {
  was_cut = text.size() > max_bytes;
  if (!was_cut) return text;
  // A UTF-8 character has at most 3 continuation bytes; stepping back further would only
  // happen inside invalid input, which the escaper replaces anyway.
  std::size_t end = max_bytes;
  while (end > 0 && max_bytes - end < 3 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return text.substr(0, end);
}

void append_field(std::string& out, std::string_view key, std::string_view value,
                  std::size_t max_bytes) {
  out += ",\"";
  out += key;
  out += "\":";
  bool was_cut = false;
  const std::string_view kept = cut(value, max_bytes, was_cut);
  if (!was_cut) {
    json::append_string(out, kept);
    return;
  }
  json::append_string(out, kept);
  out.insert(out.size() - 1, "...");  // inside the closing quote
}

template <class Int>
void append_number(std::string& out, std::string_view key, Int value) {
  out += ",\"";
  out += key;
  out += "\":";
  std::array<char, 24> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  out.append(buf.data(), res.ptr);
}

// Milliseconds with exactly three decimals from integer microseconds: no float rounding.
void append_duration_ms(std::string& out, Duration duration) {
  const std::int64_t ns = std::max<std::int64_t>(0, duration.count());
  const std::int64_t micros = (ns + 500) / 1000;
  append_number(out, "duration_ms", micros / 1000);
  const std::int64_t frac = micros % 1000;
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
}

}  // namespace

std::unique_ptr<AccessLogSink> make_stream_sink(std::ostream& stream) {
  return std::make_unique<StreamSink>(stream);
}

AccessLogWriter::AccessLogWriter(std::unique_ptr<AccessLogSink> sink, AccessLogOptions options)
    : sink_(std::move(sink)), options_(options) {}

AccessLogWriter::~AccessLogWriter() { (void)flush(); }

Result<std::unique_ptr<AccessLogWriter>> AccessLogWriter::open_file(const std::string& path,
                                                                    AccessLogOptions options) {
  // O_APPEND: each write() lands at the end as one piece, even with other writers.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(ErrorCode::kIo, "cannot open access log '" + path +
                                          "': " + std::generic_category().message(errno));
  }
  return std::make_unique<AccessLogWriter>(std::make_unique<FdSink>(fd, /*owned=*/true), options);
}

std::unique_ptr<AccessLogWriter> AccessLogWriter::to_stdout(AccessLogOptions options) {
  return std::make_unique<AccessLogWriter>(std::make_unique<FdSink>(STDOUT_FILENO, /*owned=*/false),
                                           options);
}

void AccessLogWriter::format(const AccessRecord& record, std::size_t max_field_bytes,
                             std::string& out) {
  out += "{\"ts\":\"";
  json::append_timestamp(out, record.time);
  out += '"';
  append_field(out, "request_id", record.request_id, max_field_bytes);
  append_field(out, "remote", record.remote, max_field_bytes);
  append_field(out, "method", record.method, max_field_bytes);
  append_field(out, "path", record.path, max_field_bytes);
  append_number(out, "status", record.status);
  append_number(out, "bytes_in", record.bytes_in);
  append_number(out, "bytes_out", record.bytes_out);
  append_duration_ms(out, record.duration);
  if (!record.upstream.empty()) append_field(out, "upstream", record.upstream, max_field_bytes);
  if (!record.error.empty()) append_field(out, "error", record.error, max_field_bytes);
  if (!record.user_agent.empty()) {
    append_field(out, "user_agent", record.user_agent, max_field_bytes);
  }
  out += "}\n";
}

Status AccessLogWriter::write(const AccessRecord& record) {
  std::lock_guard lock(mu_);
  format(record, options_.max_field_bytes, buffer_);
  ++pending_lines_;
  ++stats_.lines;
  if (buffer_.size() < options_.buffer_bytes) return ok_status();
  return write_out();
}

Status AccessLogWriter::flush() {
  std::lock_guard lock(mu_);
  return write_out();
}

AccessLogWriter::Stats AccessLogWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status AccessLogWriter::write_out() {
  if (buffer_.empty()) return ok_status();
  Status status = sink_->write(buffer_);
  if (!status) stats_.dropped += pending_lines_;
  pending_lines_ = 0;
  buffer_.clear();
  // Keep the buffer's memory for reuse, unless one huge batch left it far above its bound.
  if (buffer_.capacity() >
      4 * std::max<std::size_t>(options_.buffer_bytes, std::size_t{64} * 1024)) {
    buffer_.shrink_to_fit();
  }
  return status;
}

}  // namespace omni::log
