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
  std::uint32_t prompt_tokens = 0;
  std::uint32_t completion_tokens = 0;
};

// The optional token-id echoes (return_token_ids).
struct TokenIds {
  std::span<const std::uint32_t> prompt;
  std::span<const std::uint32_t> output;
  bool enabled = false;
};

// JSON string literal with escapes, e.g. "a\"b".
std::string json_quote(std::string_view text);

// A complete non-streaming response. `kv_transfer_params_json` is raw JSON ("null" if none).
std::string format_response(const ResponseContext& ctx, std::string_view text,
                            std::string_view finish_reason, const Usage& usage,
                            const TokenIds& ids, std::string_view kv_transfer_params_json);

// One SSE event's JSON (without "data: "): a content chunk; `finish_reason` empty means null.
// `usage` when continuous_usage_stats; `fingerprint` on a final chunk with no usage chunk after.
std::string format_chunk(const ResponseContext& ctx, std::string_view text,
                         std::string_view finish_reason, const std::optional<Usage>& usage,
                         const TokenIds& ids, bool with_fingerprint);
// The chat role chunk that opens a chat stream.
std::string format_role_chunk(const ResponseContext& ctx, const std::optional<Usage>& usage);
// The final usage chunk (include_usage): "choices":[] and usage.
std::string format_usage_chunk(const ResponseContext& ctx, const Usage& usage);
// An error inside a stream: {"error": {"message": ..., "type": ..., "param": null, "code": N}}.
std::string format_stream_error(std::string_view message, std::string_view type, int code);

}  // namespace omni::sim
