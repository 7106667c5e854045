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

// Parses a request straight into omni's own types: no Beast message and field list to copy
// out of afterwards (that copy cost an allocation per header on every request).
class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  Method method() const noexcept { return method_; }
  unsigned version() const noexcept { return version_; }
  bool expects_continue() const noexcept { return expects_continue_; }
  // Moves the parsed parts out (the parser is spent afterwards).
  void move_into(Request& out);

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::system::error_code;
  void on_request_impl(boost::beast::http::verb, string_view method, string_view target,
                       int version, error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code&) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_body_impl(string_view data, error_code&) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code&) override;
  void on_finish_impl(error_code&) override {}

  Method method_ = Method::kUnknown;
  unsigned version_ = 11;
  bool expects_continue_ = false;
  std::string target_;
  Headers headers_;
  std::string body_;
};

struct ParseLimits {
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 16 * 1024 * 1024;
};

// Why the server refuses a request itself, before any handler sees it.
struct Rejection {
  int status = 400;
  std::string_view message;  // static text, safe to keep
};

// Applies the limits to a fresh parser. Every parser the server creates goes through here.
void configure_parser(RequestParser& parser, const ParseLimits& limits);

// Checks a parsed head: a method outside omni::http::Method is 501.
std::optional<Rejection> check_head(const RequestParser& parser);

// The answer to a parse error: 431 (head too large), 413 (body too large), else 400.
Rejection classify_parse_error(const boost::system::error_code& ec);

// Whether the client waits for "100 Continue" before sending its body.
bool expects_continue(const RequestParser& parser);

// Moves the parsed message into `out` (the body is moved, not copied). `out` is reused
// across requests on one connection, so its buffers keep their capacity.
void to_request(RequestParser& parser, Request& out);

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
