// vLLM's response bodies and SSE chunks, byte for byte in field order (spec §3.3–§3.5):
// non-streaming bodies are full dumps (every field, nulls included); stream chunks carry the
// fields vLLM sets; errors inside a stream use Python json.dumps spacing. Pure string building.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sim/request.hpp"

namespace omni::sim {

struct ResponseContext {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;  // "cmpl-<base>" or "chatcmpl-<base>"
  std::int64_t created = 0;
  std::string model;
  std::string fingerprint;  // system_fingerprint; empty: null
};

struct Usage {
  Usage() = default;
  Usage(std::uint32_t prompt, std::uint32_t completion,
        std::optional<std::uint32_t> cached = std::nullopt)
      : prompt_tokens(prompt), completion_tokens(completion), cached_tokens(cached) {}
  std::uint32_t prompt_tokens = 0;
  std::uint32_t completion_tokens = 0;
  // prompt_tokens_details.cached_tokens: set only with --enable-prompt-tokens-details and a
  // non-zero count, as vLLM (otherwise prompt_tokens_details is null, or absent in streams).
  std::optional<std::uint32_t> cached_tokens;
};

// The optional token-id echoes (return_token_ids).
struct TokenIds {
  std::span<const std::uint32_t> prompt;
  std::span<const std::uint32_t> output;
  bool enabled = false;
};

// JSON string literal with escapes, e.g. "a\"b".
std::string json_quote(std::string_view text);

// One choice of a response (n > 1 gives several, indexed 0..n-1).
struct Choice {
  std::uint32_t index = 0;
  std::string_view text;
  std::string_view finish_reason;            // empty: null (still generating)
  std::string_view stop_reason = "null";     // raw JSON: null, the stop string, or the token id
  std::span<const std::uint32_t> token_ids;  // written only when TokenIds::enabled
  std::string_view logprobs = "null";        // raw JSON: the choice's logprobs object
};

// A complete non-streaming response. `kv_transfer_params_json` is raw JSON ("null" if none).
// `ids.output` is unused (each choice has its own).
std::string format_response(const ResponseContext& ctx, std::span<const Choice> choices,
                            const Usage& usage, const TokenIds& ids,
                            std::string_view kv_transfer_params_json);
// The one-choice form.
std::string format_response(const ResponseContext& ctx, std::string_view text,
                            std::string_view finish_reason, const Usage& usage, const TokenIds& ids,
                            std::string_view kv_transfer_params_json);

// One SSE event's JSON (without "data: "): a content chunk of `choice`. `usage` when
// continuous_usage_stats; `fingerprint` on a final chunk with no usage chunk after.
std::string format_chunk(const ResponseContext& ctx, const Choice& choice,
                         const std::optional<Usage>& usage, const TokenIds& ids,
                         bool with_fingerprint);
// The one-choice form; `finish_reason` empty means null.
std::string format_chunk(const ResponseContext& ctx, std::string_view text,
                         std::string_view finish_reason, const std::optional<Usage>& usage,
                         const TokenIds& ids, bool with_fingerprint);
// The chat role chunk that opens a chat stream (one per choice).
std::string format_role_chunk(const ResponseContext& ctx, const std::optional<Usage>& usage,
                              std::uint32_t index = 0);
// The final usage chunk (include_usage): "choices":[] and usage.
std::string format_usage_chunk(const ResponseContext& ctx, const Usage& usage);
// An error inside a stream: {"error": {"message": ..., "type": ..., "param": null, "code": N}}.
std::string format_stream_error(std::string_view message, std::string_view type, int code);

}  // namespace omni::sim
