// Plain HTTP message types shared by the server, the client and every handler.
//
// Deliberately free of Boost.Beast: handlers and the scheduling core include this header, and
// Beast is expensive to compile. The server and client convert at the edge.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omni::http {

enum class Method { kGet, kHead, kPost, kPut, kDelete, kOptions, kPatch, kUnknown };

std::string_view method_name(Method method) noexcept;
// Case-sensitive, as in RFC 9110; anything else is kUnknown.
Method parse_method(std::string_view name) noexcept;
// The standard reason phrase ("Not Found"), or "Unknown".
std::string_view status_reason(int status) noexcept;

// An ordered header list with case-insensitive names; duplicates are kept (add) or
// collapsed (set). Small: a vector, because requests carry a dozen fields at most.
class Headers {
 public:
  using Field = std::pair<std::string, std::string>;

  void add(std::string name, std::string value);
  // Replaces every field named `name` with one field.
  void set(std::string name, std::string value);
  // The first field named `name`.
  std::optional<std::string_view> get(std::string_view name) const;
  bool contains(std::string_view name) const { return get(name).has_value(); }
  // Removes every field named `name`; returns how many were removed.
  std::size_t remove(std::string_view name);

  std::size_t size() const noexcept { return fields_.size(); }
  bool empty() const noexcept { return fields_.empty(); }
  auto begin() const noexcept { return fields_.begin(); }
  auto end() const noexcept { return fields_.end(); }
  void clear() noexcept { fields_.clear(); }
  void reserve(std::size_t n) { fields_.reserve(n); }

 private:
  std::vector<Field> fields_;
};

bool iequals(std::string_view a, std::string_view b) noexcept;
// Whether `text` holds a CR, LF or NUL: in a header value or a target, any of them would let
// the text split the head (header injection). One pass, no per-character library call.
bool has_line_break(std::string_view text) noexcept;

struct Request {
  Method method = Method::kGet;
  std::string target = "/";  // origin-form: path plus optional "?query"
  Headers headers;
  std::string body;
  // Server side only: the peer address, "127.0.0.1:53412".
  std::string remote;

  std::string_view path() const noexcept;   // target without the query
  std::string_view query() const noexcept;  // after '?', or empty
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
};

// The OpenAI/vLLM error body: {"error":{"message":..,"type":..,"param":..,"code":status}}.
// `type` defaults to the status reason phrase, as vLLM does for validation errors; an empty
// `param` is written as null.
std::string error_body(int status, std::string_view message, std::string_view type = {},
                       std::string_view param = {});
// A complete error Response with Content-Type application/json.
Response error_response(int status, std::string_view message, std::string_view type = {},
                        std::string_view param = {});

}  // namespace omni::http
