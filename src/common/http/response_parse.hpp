// The client's response parsing, in one place so that the fuzzer (fuzz/http_response) and the
// corpus regression test exercise exactly what the client runs.
//
// Private to omni_http: it exposes Beast types, which public headers must not.
#pragma once

#include <algorithm>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "omni/http/types.hpp"

namespace omni::http::detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

// Parses a response head straight into omni's types (no Beast message, no field list to
// copy from), and its body into a buffer the caller lends piece by piece, as Beast's
// buffer_body does: a streamed body is never held whole in memory.
class ResponseParser final : public bhttp::basic_parser<false> {
 public:
  // Where the next body bytes go; advanced as they arrive. No room (or no buffer) makes the
  // parser stop with need_buffer.
  struct BodyTarget {
    char* data = nullptr;
    std::size_t size = 0;
  };

  int status() const noexcept { return status_; }
  Headers& headers() noexcept { return headers_; }
  BodyTarget& body() noexcept { return body_; }

 private:
  void on_request_impl(bhttp::verb, beast::string_view, beast::string_view, int,
                       boost::system::error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, boost::system::error_code& ec) override {
    // Beast takes any three digits; RFC 9110 defines 100-599, and a proxy must not pass on
    // a status line its own server could not write.
    if (code < 100 || code > 599) {
      ec = bhttp::error::bad_status;
      return;
    }
    status_ = code;
    headers_.clear();  // an interim (1xx) head is followed by the real one
  }
  void on_field_impl(bhttp::field, beast::string_view name, beast::string_view value,
                     boost::system::error_code&) override {
    headers_.add(std::string(name), std::string(value));
  }
  void on_header_impl(boost::system::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&,
                         boost::system::error_code&) override {}
  std::size_t on_body_impl(beast::string_view data, boost::system::error_code& ec) override {
    return take(data, ec);
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view,
                            boost::system::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view data,
                                 boost::system::error_code& ec) override {
    return take(data, ec);
  }
  void on_finish_impl(boost::system::error_code&) override {}

  std::size_t take(beast::string_view data, boost::system::error_code& ec) {
    const std::size_t n = std::min(data.size(), body_.size);
    if (n > 0) {  // (no arithmetic on a null buffer)
      std::memcpy(body_.data, data.data(), n);
      body_.data += n;
      body_.size -= n;
    }
    if (n < data.size()) ec = bhttp::error::need_buffer;
    return n;
  }

  int status_ = 0;
  Headers headers_;
  BodyTarget body_;
};

// What the fuzz entry saw: complete responses, and whether the input was refused as malformed
// or over the limits (a quiet end of input is not a refusal).
struct ResponseFuzzOutcome {
  std::size_t responses = 0;
  bool refused = false;
};

// The limits the fuzz entry uses: small, so that fuzz inputs reach them.
inline constexpr std::size_t kFuzzResponseHeadBytes = 1024;
inline constexpr std::size_t kFuzzResponseBodyBytes = 4096;

// Runs `data` through the client's parse path as if it arrived on one connection: interim
// (1xx) heads skipped, each body lent 7 bytes at a time (so pieces end mid-chunk and
// mid-line), keep-alive responses one after another. A broken invariant (a body larger than
// lent or than the limit, a status outside 100-599) aborts, which is what the fuzzer looks for.
ResponseFuzzOutcome fuzz_parse_response(const std::uint8_t* data, std::size_t size);

}  // namespace omni::http::detail
