// The server's request parsing configuration, in one place so that the fuzzer
// (fuzz/http_request) and the corpus regression test exercise exactly what the server runs.
//
// Private to omni_http: it exposes Beast types, which public headers must not.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "omni/http/types.hpp"

namespace omni::http::detail {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

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
