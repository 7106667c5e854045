// Server-sent events: the wire format and the incremental WHATWG parser.
//
// The parser is on the relay's hot path (every token of every stream passes through it), so
// a line that lies wholly inside one fed chunk is processed in place, without copying it into
// line_; only a line split across chunks is assembled there.
#include <cstring>

#include "omni/http/sse.hpp"

namespace omni::http {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// Calls `emit(line)` for every line of `text`, where a line ends in CRLF, LF or CR (the last
// line needs no terminator). Used for values that must not break the event framing.
template <class Emit>
void for_each_line(std::string_view text, Emit&& emit) {
  for (;;) {
    const std::size_t end = text.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      emit(text);
      return;
    }
    emit(text.substr(0, end));
    std::size_t next = end + 1;
    if (text[end] == '\r' && next < text.size() && text[next] == '\n') ++next;
    text.remove_prefix(next);
  }
}

// Event names and ids are single-line fields: line breaks in them cannot be represented, so
// they are dropped rather than allowed to start a forged field.
void append_single_line(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c != '\r' && c != '\n') out.push_back(c);
  }
}

// The position of the first CR or LF in `bytes`, or npos. Two memchr calls beat
// find_first_of: glibc's memchr is vectorised, and LF-terminated lines are the common case.
std::size_t find_line_end(std::string_view bytes) noexcept {
  const char* begin = bytes.data();
  std::size_t limit = bytes.size();
  const void* lf = std::memchr(begin, '\n', limit);
  if (lf != nullptr) limit = static_cast<std::size_t>(static_cast<const char*>(lf) - begin);
  const void* cr = std::memchr(begin, '\r', limit);
  if (cr != nullptr) return static_cast<std::size_t>(static_cast<const char*>(cr) - begin);
  return lf != nullptr ? limit : std::string_view::npos;
}

bool all_digits(std::string_view text) noexcept {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Digits only (checked by the caller); nullopt when the value does not fit in 32 bits.
std::optional<std::uint32_t> parse_retry(std::string_view digits) noexcept {
  std::uint64_t value = 0;
  for (char c : digits) {
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    if (value > UINT32_MAX) return std::nullopt;
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace

std::string format_sse(const SseEvent& event) {
  std::string out;
  out.reserve(event.data.size() + event.event.size() + event.id.size() + 32);
  if (!event.event.empty()) {
    out += "event: ";
    append_single_line(out, event.event);
    out += '\n';
  }
  if (!event.id.empty()) {
    out += "id: ";
    append_single_line(out, event.id);
    out += '\n';
  }
  if (event.retry) {
    out += "retry: ";
    out += std::to_string(*event.retry);
    out += '\n';
  }
  // Always at least one data line: an event without data is never dispatched by a reader.
  for_each_line(event.data, [&out](std::string_view line) {
    out += "data: ";
    out += line;
    out += '\n';
  });
  out += '\n';
  return out;
}

Status SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  if (failed_) return make_error(ErrorCode::kTooLarge, "SSE parser already failed on a limit");
  // The BOM may itself arrive split; its prefix is kept in line_ until decided.
  while (!bom_checked_ && !bytes.empty()) {
    if (bytes.front() != kBom[line_.size()]) {
      bom_checked_ = true;  // not a BOM: what line_ holds is ordinary line content
      break;
    }
    line_.push_back(bytes.front());
    bytes.remove_prefix(1);
    if (line_.size() == kBom.size()) {
      line_.clear();
      bom_checked_ = true;
    }
  }
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const std::size_t end = find_line_end(bytes);
    const std::size_t piece = end == std::string_view::npos ? bytes.size() : end;
    if (line_.size() + piece > max_event_bytes_) {
      failed_ = true;
      return make_error(ErrorCode::kTooLarge,
                        "SSE line exceeds " + std::to_string(max_event_bytes_) + " bytes");
    }
    if (end == std::string_view::npos) {
      line_.append(bytes);
      return ok_status();
    }
    const bool cr = bytes[end] == '\r';
    if (line_.empty()) {
      process_line(bytes.substr(0, end), out);
    } else {
      line_.append(bytes.substr(0, end));
      process_line(line_, out);
      line_.clear();
    }
    bytes.remove_prefix(end + 1);
    if (cr) {
      if (bytes.empty()) {
        skip_lf_ = true;  // the LF of this CRLF may open the next chunk
      } else if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
      }
    }
    if (pending_bytes_ > max_event_bytes_) {
      failed_ = true;
      return make_error(ErrorCode::kTooLarge,
                        "SSE event exceeds " + std::to_string(max_event_bytes_) + " bytes");
    }
  }
  return ok_status();
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (has_data_) out.push_back(std::move(pending_));
    pending_ = SseEvent{};
    has_data_ = false;
    pending_bytes_ = 0;
    return;
  }
  if (line.front() == ':') return;  // a comment
  std::string_view field = line;
  std::string_view value;
  if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data.push_back('\n');
    pending_.data.append(value);
    has_data_ = true;
    pending_bytes_ += value.size() + 1;
  } else if (field == "event") {
    pending_.event.assign(value);
    pending_bytes_ += value.size();
  } else if (field == "id") {
    if (value.find('\0') != std::string_view::npos) return;
    pending_.id.assign(value);
    last_id_.assign(value);
    pending_bytes_ += value.size();
  } else if (field == "retry") {
    if (all_digits(value)) {
      if (auto retry = parse_retry(value)) pending_.retry = retry;
    }
  }
}

bool SseParser::finish() noexcept {
  const bool unterminated = has_data_ || !line_.empty() || !pending_.event.empty() ||
                            !pending_.id.empty() || pending_.retry.has_value();
  pending_ = SseEvent{};
  has_data_ = false;
  pending_bytes_ = 0;
  line_.clear();
  skip_lf_ = false;
  bom_checked_ = false;
  return unterminated;
}

}  // namespace omni::http
