// Request rewriting for the PD legs: pure functions from one JSON body to another.
//
// The proxy never re-serialises a client's JSON: it validates the body, finds the byte span of
// each top-level member, and rebuilds the object from those spans, replacing or dropping only
// the members a leg must change. Every other member (unknown fields, numbers such as 0.70,
// key order, unicode escapes) reaches the engine byte for byte as the client wrote it.
//
//   client body ──inspect_request──▶ RequestInfo (stream, model, token estimate, ...)
//        │
//        ├─ sequential: prefill_body()  stream:false, max_tokens:1, kv_transfer_params
//        │              {do_remote_decode:true, ...}; then decode_body(prefill's params)
//        ├─ parallel:   bootstrap_body() bootstrap_host / bootstrap_port / bootstrap_room
//        └─ aggregated: the body untouched
//
// Threading: pure, reentrant. All inputs are untrusted (fuzzed in fuzz/proxy_rewrite).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::proxy {

enum class Api { kCompletions, kChatCompletions };

// What the proxy needs to know about a request; everything else is the engine's business.
struct RequestInfo {
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string model;           // empty when absent or null
  // A rough prompt size for load accounting until the tokenizer lands: token ids count
  // one each, text counts one token per 4 bytes (at least 1).
  std::uint64_t prompt_tokens = 0;
  std::uint64_t max_tokens = 16;  // max_completion_tokens, else max_tokens, else vLLM's 16
  // No bound given: max_tokens null, or (chat) absent. vLLM then generates up to the model's
  // context, so admission must count max_model_len - prompt, not a guess.
  bool max_tokens_unbounded = false;
  bool text_prompt = false;  // /v1/completions with one string as its prompt
  // Members the proxy owns (the PD protocol's fields, engine request ids) that the client
  // sent: bits of proxy_owned_fields() order. The proxy strips or refuses them.
  std::uint32_t proxy_owned_fields = 0;
  // vLLM's `priority` (lower is more urgent); absent or null: none given.
  std::optional<std::int64_t> priority;
};

// The names behind RequestInfo::proxy_owned_fields, comma-separated ("kv_transfer_params,
// bootstrap_host").
std::string proxy_owned_field_names(std::uint32_t fields);
// The body without any member the proxy owns (kv_transfer_params, bootstrap_host/port/room,
// disagg_prefill_dp_rank, request_id, rid); every other member byte for byte.
Result<std::string> strip_proxy_owned(std::string_view body);
// An engine's whole (non-streamed) answer as a client may see it: a non-null top-level
// kv_transfer_params (an engine's id, host and port) replaced by null. Unchanged (and not
// copied: nullopt) when there is nothing to hide.
std::optional<std::string> hide_transfer_params(std::string_view response_body);

// A client error: the message and the offending field (empty when none), for the OpenAI body.
struct BadRequest {
  std::string message;
  std::string param;
};

// Limits on what inspect_request accepts beyond the HTTP body limit.
struct InspectLimits {
  std::size_t max_depth = 64;  // JSON nesting
};

// Validates a client body (a JSON object with the route's required field) and extracts
// RequestInfo. On failure `bad` (if given) says why; the Result carries kInvalidArgument.
Result<RequestInfo> inspect_request(std::string_view body, Api api, BadRequest* bad = nullptr,
                                    InspectLimits limits = {});

// One top-level member of a JSON object: the decoded key and the raw bytes of its value.
struct JsonMember {
  std::string key;
  std::string_view value;
};
// The top-level members of a JSON object, in order (duplicates kept). kInvalidArgument if
// `json` is not a single valid JSON object.
Result<std::vector<JsonMember>> scan_object(std::string_view json);

// A member to set: `raw_value` is JSON text inserted as is.
struct JsonEdit {
  std::string key;
  std::optional<std::string> raw_value;  // nullopt: remove the member
};
// Rebuilds `object` with `edits` applied: a set member replaces the first occurrence in place
// (later duplicates are dropped) or is appended; a removed member disappears. Others are copied
// byte for byte.
Result<std::string> edit_object(std::string_view object, const std::vector<JsonEdit>& edits);

// The same on members scan_object() already found (spans into their object, which must
// outlive the call): no second validating pass. Every leg's body is rebuilt this way from the
// one scan of the client's body.
std::string edit_members(std::span<const JsonMember> members, const std::vector<JsonEdit>& edits);

// Sequential PD (vLLM NixlConnector), the prefill leg: stream false, max_tokens 1 (and
// max_completion_tokens 1 when present), no stream_options / min_tokens /
// min_completion_tokens, kv_transfer_params asking for a remote decode.
Result<std::string> prefill_body(std::string_view body);
std::string prefill_body(std::span<const JsonMember> members);
// The decode leg: the client's body with kv_transfer_params replaced verbatim by the prefill's.
Result<std::string> decode_body(std::string_view body, std::string_view kv_transfer_params);
std::string decode_body(std::span<const JsonMember> members, std::string_view kv_transfer_params);
// The raw kv_transfer_params object of a prefill's non-streaming answer; nullopt when it is
// absent, null, or not a non-empty object (the prefill then "returned no usable params").
Result<std::optional<std::string>> kv_transfer_params_of(std::string_view response_body);

// Parallel PD (SGLang): the same body to both legs with the bootstrap fields added.
struct Bootstrap {
  std::string host;  // IPv6 literals are written in brackets
  std::uint16_t port = 8998;
  std::uint64_t room = 0;  // [0, 2^63 - 1]
};
Result<std::string> bootstrap_body(std::string_view body, const Bootstrap& bootstrap);
std::string bootstrap_body(std::span<const JsonMember> members, const Bootstrap& bootstrap);

// Writes `text` as a JSON string literal (quotes included).
std::string json_quote(std::string_view text);

}  // namespace omni::proxy
