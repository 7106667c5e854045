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
  parser.set_limits(limits);
}

std::optional<Rejection> check_head(const RequestParser& parser) {
  // Versions need no check here: Beast's parser refuses anything but HTTP/1.0 and 1.1.
  if (parser.method() == Method::kUnknown) return Rejection{501, "method not implemented"};
  return std::nullopt;
}

Rejection classify_parse_error(const RequestParser& parser, const boost::system::error_code& ec) {
  if (parser.rejection()) return *parser.rejection();
  if (ec == http::error::header_limit) return Rejection{431, "request header fields too large"};
  if (ec == http::error::buffer_overflow) {
    // Only a head, a chunk header line or a trailer section is ever held whole.
    return parser.is_header_done() ? Rejection{413, "chunk header or trailer section too large"}
                                   : Rejection{431, "request header fields too large"};
  }
  if (ec == http::error::body_limit) return Rejection{413, "request body too large"};
  if (ec == http::error::bad_transfer_encoding || ec == http::error::bad_content_length ||
      ec == http::error::multiple_content_length) {
    return Rejection{400, "conflicting or malformed message framing"};
  }
  return Rejection{400, "malformed HTTP request"};
}

std::size_t max_buffered_body_bytes(const ParseLimits& limits) noexcept {
  return limits.max_header_bytes + 4096;
}

bool expects_continue(const RequestParser& parser) { return parser.expects_continue(); }

void RequestParser::move_head_into(Request& out) {
  out.method = method_;
  out.target = std::move(target_);
  out.headers = std::move(headers_);
  out.body.clear();
}

void RequestParser::move_body_into(Request& out) { out.body = std::move(body_); }

void RequestParser::refuse(Rejection rejection, error_code& ec) {
  if (!rejection_) rejection_ = rejection;
  // Any error stops Beast; classify_parse_error() answers with the rejection above.
  ec = http::error::bad_value;
}

void RequestParser::on_request_impl(http::verb, string_view method, string_view target, int version,
                                    error_code&) {
  method_ = omni::http::parse_method(view(method));
  target_.assign(target.data(), target.size());
  version_ = static_cast<unsigned>(version);
}

namespace {

// RFC 9110 section 7.2: uri-host [ ":" port ]; uri-host is a reg-name, an IPv4 address or a
// bracketed IP literal. Checked loosely but safely: no byte that could change how the value
// is read (spaces, '/', '?', '#', '@', '\\', controls).
bool valid_host_value(std::string_view value) {
  for (const unsigned char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("-._~%!$&'()*+,;=:[]").find(static_cast<char>(c)) !=
                        std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

void RequestParser::on_field_impl(http::field name, string_view name_string, string_view value,
                                  error_code& ec) {
  if (is_header_done()) {
    // A trailer field (after the last chunk): counted, never merged into the headers, which
    // handlers (and authentication) read from the head alone.
    on_trailer_field(name_string.size() + value.size() + 4, ec);
    return;
  }
  if (name == http::field::expect && version_ >= 11 && iequals(view(value), "100-continue")) {
    expects_continue_ = true;
  }
  if (name == http::field::host) {
    ++host_fields_;
    host_valid_ = host_valid_ && valid_host_value(view(value));
  } else if (name == http::field::content_length) {
    content_length_ = true;
  } else if (name == http::field::transfer_encoding) {
    note_transfer_encoding(view(value));
  }
  headers_.add(std::string(view(name_string)), std::string(view(value)));
}

void RequestParser::note_transfer_encoding(std::string_view value) {
  transfer_encoding_ = true;
  // A comma-separated list of codings, each possibly with parameters (";q=..."): the last
  // one decides the framing, every one must be understood.
  while (!value.empty()) {
    const auto comma = value.find(',');
    std::string_view coding = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    coding = trim(coding.substr(0, coding.find(';')));
    if (coding.empty()) continue;  // empty list elements are allowed (RFC 9110 5.6.1)
    chunked_last_ = iequals(coding, "chunked");
    if (chunked_last_) {
      ++chunked_codings_;
    } else {
      other_codings_ = true;
    }
  }
}

std::optional<Rejection> RequestParser::check_framing() const {
  if (transfer_encoding_) {
    if (version_ < 11) return Rejection{400, "Transfer-Encoding is not allowed in HTTP/1.0"};
    if (content_length_) {
      return Rejection{400, "a request must not carry both Content-Length and Transfer-Encoding"};
    }
    if (!chunked_last_ || chunked_codings_ != 1) {
      return Rejection{400, "chunked must be the final transfer coding, applied once"};
    }
    if (other_codings_) return Rejection{501, "transfer coding not implemented"};
  }
  if (host_fields_ > 1) return Rejection{400, "more than one Host header field"};
  if (host_fields_ == 0 && version_ >= 11) return Rejection{400, "an HTTP/1.1 request needs Host"};
  if (!host_valid_) return Rejection{400, "invalid Host header field"};
  return std::nullopt;
}

// RFC 9112 section 3.2: origin-form for every method here, asterisk-form for OPTIONS only,
// and absolute-form accepted, rewritten to origin-form with its authority as the Host.
std::optional<Rejection> RequestParser::check_target() {
  if (!target_.empty() && target_.front() == '/') return std::nullopt;
  if (target_ == "*" && method_ == Method::kOptions) return std::nullopt;
  const std::string_view t(target_);
  std::size_t scheme_end = 0;
  if (t.size() > 7 && iequals(t.substr(0, 7), "http://")) {
    scheme_end = 7;
  } else if (t.size() > 8 && iequals(t.substr(0, 8), "https://")) {
    scheme_end = 8;
  } else {
    return Rejection{400, "invalid request target"};
  }
  const std::size_t path_start = t.find_first_of("/?#", scheme_end);
  const std::string_view authority = t.substr(scheme_end, path_start - scheme_end);
  if (authority.empty() || authority.find('@') != std::string_view::npos ||
      !valid_host_value(authority)) {
    return Rejection{400, "invalid authority in the request target"};
  }
  std::string origin =
      path_start == std::string_view::npos ? "/" : std::string(t.substr(path_start));
  if (origin.front() != '/') origin.insert(origin.begin(), '/');
  if (const auto hash = origin.find('#'); hash != std::string::npos) origin.resize(hash);
  headers_.set("Host", std::string(authority));
  target_ = std::move(origin);
  return std::nullopt;
}

void RequestParser::on_header_impl(error_code& ec) {
  if (method_ == Method::kUnknown) return;  // check_head() answers 501 first
  if (auto rejection = check_framing()) return refuse(*rejection, ec);
  if (auto rejection = check_target()) return refuse(*rejection, ec);
}

bool RequestParser::framing_within_limits() const noexcept {
  return framing_bytes_ <= limits_.max_header_bytes &&
         framing_bytes_ + body_.size() <= limits_.max_body_bytes;
}

void RequestParser::on_trailer_field(std::size_t bytes, error_code& ec) {
  framing_bytes_ += bytes;
  if (framing_bytes_ > limits_.max_header_bytes) {
    return refuse(Rejection{431, "trailer fields too large"}, ec);
  }
  if (!framing_within_limits()) refuse(Rejection{413, "request body too large"}, ec);
}

void RequestParser::on_chunk_header_impl(std::uint64_t, string_view extensions, error_code& ec) {
  framing_bytes_ += extensions.size();
  if (!framing_within_limits()) {
    refuse(Rejection{413, "chunk extensions too large"}, ec);
  }
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) {
  // body_limit has bounded an announced length already.
  if (length) body_.reserve(static_cast<std::size_t>(*length));
}

std::size_t RequestParser::on_body_impl(string_view data, error_code&) {
  body_.append(data.data(), data.size());
  return data.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view data, error_code& ec) {
  if (framing_bytes_ + body_.size() + data.size() > limits_.max_body_bytes) {
    refuse(Rejection{413, "request body too large"}, ec);
    return 0;
  }
  body_.append(data.data(), data.size());
  return data.size();
}

namespace {

// Feeds `data[offset..size)` to the parser the way the socket loop would: everything
// available at once, more when Beast asks for it, end of input as EOF. Past the head, the
// connection holds at most max_buffered_body_bytes() unparsed, so a chunk header line or a
// trailer section longer than that overflows as it would on a socket.
boost::system::error_code feed(RequestParser& parser, const std::uint8_t* data, std::size_t size,
                               std::size_t& offset) {
  boost::system::error_code ec;
  const std::size_t window = max_buffered_body_bytes(kFuzzLimits);
  while (!parser.is_done()) {
    if (offset == size) {
      // The input ends before the message does: the peer closed here.
      parser.put_eof(ec);
      return ec;
    }
    const std::size_t left = size - offset;
    const std::size_t offered = parser.is_header_done() ? std::min(left, window) : left;
    const std::size_t used = parser.put(boost::asio::buffer(data + offset, offered), ec);
    offset += used;
    if (ec == http::error::need_more) {
      ec = {};
      if (used == 0 && offered < left) return http::error::buffer_overflow;
      // Beast wants more than what is left in one piece (e.g. the rest of a head line).
      if (used == 0) offset = size;
      continue;
    }
    if (ec) return ec;
  }
  return ec;
}

[[noreturn]] void invariant_broken() { std::abort(); }

// What a handler may rely on about the framing of every request it is given.
void check_delivered(const Request& request, unsigned version) {
  if (request.body.size() > kFuzzLimits.max_body_bytes) invariant_broken();
  if (request.method == Method::kUnknown) invariant_broken();
  const bool origin = !request.target.empty() && request.target.front() == '/';
  if (!origin && !(request.target == "*" && request.method == Method::kOptions)) {
    invariant_broken();
  }
  std::size_t hosts = 0;
  bool length = false;
  bool coding = false;
  for (const auto& [name, value] : request.headers) {
    hosts += iequals(name, "Host") ? 1 : 0;
    length = length || iequals(name, "Content-Length");
    coding = coding || iequals(name, "Transfer-Encoding");
  }
  if (hosts > 1 || (version >= 11 && hosts == 0)) invariant_broken();
  if (length && coding) invariant_broken();
  if (coding && version < 11) invariant_broken();
}

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
        outcome.rejected_status = classify_parse_error(parser, ec).status;
      }
      return outcome;
    }
    parser.move_head_into(request);
    parser.move_body_into(request);
    check_delivered(request, parser.version());
    ++outcome.requests;
    if (!parser.keep_alive()) break;
  }
  return outcome;
}

}  // namespace omni::http::detail
