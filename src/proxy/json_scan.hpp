// Scanning JSON without building a DOM. Internal to rewrite.cpp.
//
// Validation runs Boost.JSON's own tokenizer (basic_parser) with a handler that keeps only what
// the proxy needs, so a body is accepted or refused exactly as boost::json::parse would (same
// options, same error codes) without allocating a node per value. scan_valid_object() then
// trusts its input to be one valid JSON object and only finds member boundaries.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/proxy/rewrite.hpp"

namespace omni::proxy::detail {

std::vector<JsonMember> scan_valid_object(std::string_view json);

// Whether `text` is one valid JSON document (boost::json::parse's verdict with `max_depth`);
// the value says whether its root is an object. Errors: kInvalidArgument "invalid JSON: ...".
Result<bool> validate_json(std::string_view text, std::size_t max_depth);

// The prompt size estimate: one token per 4 bytes of text (rounded up), per string.
constexpr std::uint64_t text_tokens(std::size_t bytes) { return bytes == 0 ? 0 : (bytes + 3) / 4; }

// The JSON type of a member's value as boost::json::value would hold it.
enum class Kind : std::uint8_t { kAbsent, kNull, kBool, kInt, kDouble, kString, kArray, kObject };

// What inspect_request reads from a request body. With duplicate keys the last occurrence
// counts, as in a boost::json::object.
struct RequestFields {
  bool root_is_object = false;
  Kind stream = Kind::kAbsent;
  bool stream_value = false;
  bool include_usage = false;  // stream_options is an object whose include_usage is true
  Kind model = Kind::kAbsent;
  std::string model_value;
  Kind prompt = Kind::kAbsent;
  std::uint64_t prompt_tokens = 0;  // strings by text_tokens, integers one each, lists summed
  Kind messages = Kind::kAbsent;
  std::uint64_t message_tokens = 0;         // content strings and the text of content parts
  std::optional<std::uint64_t> max_tokens;  // when a non-negative integer
  std::optional<std::uint64_t> max_completion_tokens;  // when a non-negative integer
  Kind max_tokens_kind = Kind::kAbsent;                // to tell null from absent
  Kind max_completion_tokens_kind = Kind::kAbsent;
  Kind priority = Kind::kAbsent;    // vLLM's request priority (lower: more urgent)
  std::int64_t priority_value = 0;  // when an integer in int64's range
  bool priority_in_range = false;
  std::uint32_t proxy_owned = 0;  // top-level members the proxy owns: bits of proxy_owned_keys()
};

// The top-level request members that belong to the PD protocol (or name an engine's own
// request id) and must never come from a client; bit i of RequestFields::proxy_owned is
// element i.
std::span<const std::string_view> proxy_owned_keys() noexcept;
// One validating pass over `body`; errors as validate_json().
Result<RequestFields> scan_request(std::string_view body, std::size_t max_depth);

}  // namespace omni::proxy::detail
