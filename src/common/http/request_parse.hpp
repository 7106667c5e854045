// The server's request parsing configuration, in one place so that the fuzzer
// (fuzz/http_request) and the corpus regression test exercise exactly what the server runs.
//
// Private to omni_http: it exposes Beast types, which public headers must not.
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "omni/http/types.hpp"

namespace omni::http::detail {

struct ParseLimits {
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 16 * 1024 * 1024;
};

// Why the server refuses a request itself, before any handler sees it.
struct Rejection {
  int status = 400;
  std::string_view message;  // static text, safe to keep
};

// Parses a request straight into omni's own types: no Beast message and field list to copy
// out of afterwards (that copy cost an allocation per header on every request).
//
// Beyond Beast's own checks it enforces the framing rules of RFC 9112 that Beast leaves to
// the application, because a server that frames a request differently from the proxy or
// client in front of it can be made to read a second, smuggled request out of a body:
//   - Transfer-Encoding: chunked must be the final coding, and the only one (Beast silently
//     reads a body of length 0 otherwise); another coding is 501; Transfer-Encoding with
//     Content-Length, or in HTTP/1.0, is 400;
//   - exactly one Host field in HTTP/1.1, at most one in 1.0, with a valid value;
//   - origin-form targets ('/...'), '*' only for OPTIONS, absolute-form ('http://a/p')
//     rewritten to origin-form with its authority as the Host (RFC 9112 section 3.2.2);
//   - chunk extensions and trailer fields count against the body limit, and together stay
//     within the header limit; trailer fields are never merged into the request's headers.
class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  Method method() const noexcept { return method_; }
  unsigned version() const noexcept { return version_; }
  bool expects_continue() const noexcept { return expects_continue_; }
  // The refusal the parser decided itself (framing, Host, target, extensions, trailers);
  // nullopt when a parse error is Beast's own.
  const std::optional<Rejection>& rejection() const noexcept { return rejection_; }
  void set_limits(const ParseLimits& limits) noexcept { limits_ = limits; }
  // What is known of the request before move_head_into(): the target once the request line
  // is read (empty before), the fields read so far. For reporting refusals.
  std::string_view target() const noexcept { return target_; }
  const Headers& headers() const noexcept { return headers_; }
  // Moves the method, target and headers out once the head is parsed (the body keeps
  // arriving into the parser); move_body_into() then hands over the body.
  void move_head_into(Request& out);
  void move_body_into(Request& out);

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::system::error_code;
  void on_request_impl(boost::beast::http::verb, string_view method, string_view target,
                       int version, error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code&) override;
  void on_header_impl(error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_body_impl(string_view data, error_code&) override;
  void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code&) override;
  void on_finish_impl(error_code&) override {}

  // Records `rejection` and stops the parse.
  void refuse(Rejection rejection, error_code& ec);
  void note_transfer_encoding(std::string_view value);
  void on_trailer_field(std::size_t bytes, error_code& ec);
  std::optional<Rejection> check_framing() const;
  std::optional<Rejection> check_target();
  // Bytes of chunk extensions and trailers, against both limits.
  bool framing_within_limits() const noexcept;

  ParseLimits limits_;
  Method method_ = Method::kUnknown;
  unsigned version_ = 11;
  bool expects_continue_ = false;
  std::string target_;
  Headers headers_;
  std::string body_;
  std::optional<Rejection> rejection_;
  // Framing as the fields announced it.
  std::size_t host_fields_ = 0;
  bool host_valid_ = true;
  bool content_length_ = false;
  bool transfer_encoding_ = false;
  std::size_t chunked_codings_ = 0;
  bool chunked_last_ = false;
  bool other_codings_ = false;
  std::size_t framing_bytes_ = 0;  // chunk extensions + trailer fields
};

// Applies the limits to a fresh parser. Every parser the server creates goes through here.
void configure_parser(RequestParser& parser, const ParseLimits& limits);

// Checks a parsed head: a method outside omni::http::Method is 501.
std::optional<Rejection> check_head(const RequestParser& parser);

// The answer to a parse error: the parser's own refusal when it made one, else 431 (head
// too large), 413 (body too large), or 400.
Rejection classify_parse_error(const RequestParser& parser, const boost::system::error_code& ec);

// How many bytes the connection may hold unparsed while reading a body: a chunk header line
// (with its extensions) or the trailer section must fit, and never more. Beast parses either
// only once it is whole, so without this bound the buffer would grow without limit.
std::size_t max_buffered_body_bytes(const ParseLimits& limits) noexcept;

// Whether the client waits for "100 Continue" before sending its body.
bool expects_continue(const RequestParser& parser);

// What the fuzz entry saw: requests that would reach a handler, and the status the server
// would answer the first refused one with (0 when none was refused).
struct FuzzOutcome {
  std::size_t requests = 0;
  int rejected_status = 0;
};

// The limits the fuzz entry uses: small, so that fuzz inputs reach them.
inline constexpr ParseLimits kFuzzLimits{1024, 4096};

// Runs `data` through the server's parse path as if it arrived on one connection
// (pipelined requests included) and checks the invariants the server relies on; a broken
// invariant aborts, which is what the fuzzer looks for.
FuzzOutcome fuzz_parse_request(const std::uint8_t* data, std::size_t size);

}  // namespace omni::http::detail
