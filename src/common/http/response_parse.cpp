#include "response_parse.hpp"

#include <array>
#include <boost/asio/buffer.hpp>
#include <cstdlib>
#include <optional>

namespace omni::http::detail {
namespace {

namespace http = boost::beast::http;

[[noreturn]] void invariant_broken() { std::abort(); }

// The bytes still to parse, as the socket loop would present them.
struct Input {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t offset = 0;
  bool done() const noexcept { return offset == size; }
  boost::asio::const_buffer rest() const noexcept {
    return boost::asio::buffer(data + offset, size - offset);
  }
};

// Parses until the head is complete. false: refused, or the input ended first.
bool parse_head(ResponseParser& parser, Input& in, bool& refused) {
  while (!parser.is_header_done()) {
    if (in.done()) return false;
    boost::system::error_code ec;
    const std::size_t used = parser.put(in.rest(), ec);
    in.offset += used;
    if (ec == http::error::need_more) {
      if (used == 0) return false;  // Beast wants more than is left in one piece
      continue;
    }
    if (ec) {
      refused = true;
      return false;
    }
  }
  return true;
}

// Parses the body into 7-byte pieces. false: refused, or the input ended first.
bool parse_body(ResponseParser& parser, Input& in, bool& refused) {
  std::array<char, 7> piece{};
  std::size_t total = 0;
  while (!parser.is_done()) {
    auto& target = parser.body();
    target.data = piece.data();
    target.size = piece.size();
    boost::system::error_code ec;
    std::size_t used = 0;
    if (in.done()) {
      parser.put_eof(ec);  // completes a body delimited by the close, else partial_message
    } else {
      used = parser.put(in.rest(), ec);
      in.offset += used;
    }
    const std::size_t produced = piece.size() - target.size;
    target.data = nullptr;
    if (produced > piece.size()) invariant_broken();
    total += produced;
    if (total > kFuzzResponseBodyBytes) invariant_broken();
    if (ec == http::error::need_buffer) continue;
    if (ec == http::error::need_more) {
      if (!in.done() && used == 0 && produced == 0) return false;  // wants more than is left
      continue;  // at the end of input, the next round says whether the close completes it
    }
    if (ec) {
      refused = ec != http::error::partial_message;
      return false;
    }
    if (used == 0 && produced == 0 && !parser.is_done()) return false;  // no progress
  }
  return true;
}

}  // namespace

ResponseFuzzOutcome fuzz_parse_response(const std::uint8_t* data, std::size_t size) {
  ResponseFuzzOutcome outcome;
  Input in{data, size};
  constexpr int kMaxInterim = 8;  // as the client
  while (!in.done()) {
    std::optional<ResponseParser> parser;
    int interim = 0;
    for (;;) {
      parser.emplace();
      parser->header_limit(static_cast<std::uint32_t>(kFuzzResponseHeadBytes));
      parser->body_limit(kFuzzResponseBodyBytes);
      if (!parse_head(*parser, in, outcome.refused)) return outcome;
      const int status = parser->status();
      if (status < 100 || status > 599) invariant_broken();
      if (status >= 200 || status == 101) break;
      if (++interim > kMaxInterim) {
        outcome.refused = true;
        return outcome;
      }
    }
    if (parser->status() == 101) return outcome;  // no longer HTTP
    if (!parse_body(*parser, in, outcome.refused)) return outcome;
    ++outcome.responses;
    if (!parser->keep_alive()) break;
  }
  return outcome;
}

}  // namespace omni::http::detail
