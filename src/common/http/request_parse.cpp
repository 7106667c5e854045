#include "request_parse.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <cstdlib>
#include <limits>
#include <string>

namespace omni::http::detail {
namespace {

namespace http = boost::beast::http;

std::string_view view(boost::beast::string_view s) noexcept { return {s.data(), s.size()}; }

}  // namespace

void configure_parser(RequestParser& parser, const ParseLimits& limits) {
  // Beast takes the head limit as 32 bits; anything larger is unbounded in practice anyway.
  const std::size_t head_cap = std::numeric_limits<std::uint32_t>::max();
  parser.header_limit(static_cast<std::uint32_t>(std::min(limits.max_header_bytes, head_cap)));
  parser.body_limit(static_cast<std::uint64_t>(limits.max_body_bytes));
}

std::optional<Rejection> check_head(const RequestParser& parser) {
  // Versions need no check here: Beast's parser refuses anything but HTTP/1.0 and 1.1.
  if (parser.method() == Method::kUnknown) return Rejection{501, "method not implemented"};
  return std::nullopt;
}

Rejection classify_parse_error(const boost::system::error_code& ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return Rejection{431, "request header fields too large"};
  }
  if (ec == http::error::body_limit) return Rejection{413, "request body too large"};
  return Rejection{400, "malformed HTTP request"};
}

bool expects_continue(const RequestParser& parser) { return parser.expects_continue(); }

void to_request(RequestParser& parser, Request& out) { parser.move_into(out); }

void RequestParser::move_into(Request& out) {
  out.method = method_;
  out.target = std::move(target_);
  out.headers = std::move(headers_);
  out.body = std::move(body_);
}

void RequestParser::on_request_impl(http::verb, string_view method, string_view target,
                                    int version, error_code&) {
  method_ = omni::http::parse_method(view(method));
  target_.assign(target.data(), target.size());
  version_ = static_cast<unsigned>(version);
}

void RequestParser::on_field_impl(http::field name, string_view name_string, string_view value,
                                  error_code&) {
  if (name == http::field::expect && version_ >= 11 && iequals(view(value), "100-continue")) {
    expects_continue_ = true;
  }
  headers_.add(std::string(view(name_string)), std::string(view(value)));
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) {
  // body_limit has bounded an announced length already.
  if (length) body_.reserve(static_cast<std::size_t>(*length));
}

std::size_t RequestParser::on_body_impl(string_view data, error_code&) {
  body_.append(data.data(), data.size());
  return data.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view data, error_code&) {
  body_.append(data.data(), data.size());
  return data.size();
}

namespace {

// Feeds `data[offset..size)` to the parser the way the socket loop would: everything
// available at once, more when Beast asks for it, end of input as EOF.
boost::system::error_code feed(RequestParser& parser, const std::uint8_t* data, std::size_t size,
                               std::size_t& offset) {
  boost::system::error_code ec;
  while (!parser.is_done()) {
    if (offset == size) {
      // The input ends before the message does: the peer closed here.
      parser.put_eof(ec);
      return ec;
    }
    const std::size_t used = parser.put(boost::asio::buffer(data + offset, size - offset), ec);
    offset += used;
    if (ec == http::error::need_more) {
      ec = {};
      // Beast wants more than what is left in one piece (e.g. the rest of a head line).
      if (used == 0) offset = size;
      continue;
    }
    if (ec) return ec;
  }
  return ec;
}

[[noreturn]] void invariant_broken() { std::abort(); }

}  // namespace

FuzzOutcome fuzz_parse_request(const std::uint8_t* data, std::size_t size) {
  FuzzOutcome outcome;
  std::size_t offset = 0;
  Request request;
  while (offset < size) {
    RequestParser parser;
    configure_parser(parser, kFuzzLimits);
    parser.eager(true);
    const auto ec = feed(parser, data, size, offset);
    if (parser.is_header_done()) {
      if (const auto rejection = check_head(parser)) {
        outcome.rejected_status = rejection->status;
        return outcome;
      }
    }
    if (ec) {
      if (ec != http::error::partial_message && ec != http::error::end_of_stream) {
        outcome.rejected_status = classify_parse_error(ec).status;
      }
      return outcome;
    }
    to_request(parser, request);
    // What the server promises its handlers.
    if (request.body.size() > kFuzzLimits.max_body_bytes) invariant_broken();
    if (request.method == Method::kUnknown) invariant_broken();
    ++outcome.requests;
    if (!parser.keep_alive()) break;
  }
  return outcome;
}

}  // namespace omni::http::detail
