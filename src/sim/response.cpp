#include "sim/response.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

namespace omni::sim {
namespace {

void append_usage(std::string& out, const Usage& u, bool full) {
  out += "{\"prompt_tokens\":" + std::to_string(u.prompt_tokens) +
         ",\"total_tokens\":" + std::to_string(u.prompt_tokens + u.completion_tokens) +
         ",\"completion_tokens\":" + std::to_string(u.completion_tokens);
  if (u.cached_tokens) {
    out +=
        ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(*u.cached_tokens) + "}}";
  } else {
    out += full ? ",\"prompt_tokens_details\":null}" : "}";
  }
}

void append_ids(std::string& out, std::span<const std::uint32_t> ids, bool enabled) {
  if (!enabled) {
    out += "null";
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += ']';
}

std::string_view object_name(Endpoint e, bool chunk) {
  if (e == Endpoint::kCompletions) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

void append_head(std::string& out, const ResponseContext& ctx, bool chunk) {
  out += "{\"id\":" + json_quote(ctx.id) + ",\"object\":\"";
  out += object_name(ctx.endpoint, chunk);
  out += "\",\"created\":" + std::to_string(ctx.created) + ",\"model\":" + json_quote(ctx.model);
}

std::string fingerprint_json(const ResponseContext& ctx) {
  return ctx.fingerprint.empty() ? "null" : json_quote(ctx.fingerprint);
}

std::string finish_json(std::string_view finish_reason) {
  return finish_reason.empty() ? "null" : json_quote(finish_reason);
}

}  // namespace

std::string json_quote(std::string_view text) {
  return boost::json::serialize(boost::json::string(text));
}

std::string format_response(const ResponseContext& ctx, std::span<const Choice> choices,
                            const Usage& usage, const TokenIds& ids,
                            std::string_view kv_transfer_params_json) {
  std::string out;
  out.reserve(512 + 256 * choices.size());
  append_head(out, ctx, false);
  out += ",\"choices\":[";
  for (std::size_t k = 0; k < choices.size(); ++k) {
    const Choice& c = choices[k];
    if (k) out += ',';
    out += "{\"index\":" + std::to_string(c.index) + ',';
    if (ctx.endpoint == Endpoint::kCompletions) {
      out += "\"text\":" + json_quote(c.text) + ",\"logprobs\":";
      out += c.logprobs;
      out += ",\"finish_reason\":" + finish_json(c.finish_reason) + ",\"stop_reason\":";
      out += c.stop_reason;
      out += ",\"token_ids\":";
      append_ids(out, c.token_ids, ids.enabled);
      out += ",\"prompt_logprobs\":null,\"prompt_token_ids\":";
      append_ids(out, ids.prompt, ids.enabled);
      out += "}";
    } else {
      out += "\"message\":{\"role\":\"assistant\",\"content\":" + json_quote(c.text) +
             ",\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,"
             "\"tool_calls\":[],\"reasoning\":null},\"logprobs\":";
      out += c.logprobs;
      out += ",\"finish_reason\":" + finish_json(c.finish_reason) + ",\"stop_reason\":";
      out += c.stop_reason;
      out += ",\"token_ids\":";
      append_ids(out, c.token_ids, ids.enabled);
      out += "}";
    }
  }
  out += "],\"service_tier\":null,\"system_fingerprint\":" + fingerprint_json(ctx) + ",\"usage\":";
  append_usage(out, usage, true);
  if (ctx.endpoint == Endpoint::kChat) {
    out += ",\"prompt_logprobs\":null,\"prompt_token_ids\":";
    append_ids(out, ids.prompt, ids.enabled);
    out += ",\"prompt_text\":null";
  }
  out += ",\"kv_transfer_params\":";
  out += kv_transfer_params_json.empty() ? std::string_view("null") : kv_transfer_params_json;
  out += '}';
  return out;
}

std::string format_response(const ResponseContext& ctx, std::string_view text,
                            std::string_view finish_reason, const Usage& usage, const TokenIds& ids,
                            std::string_view kv_transfer_params_json) {
  const Choice choice{0, text, finish_reason, "null", ids.output};
  return format_response(ctx, std::span<const Choice>(&choice, 1), usage, ids,
                         kv_transfer_params_json);
}

std::string format_chunk(const ResponseContext& ctx, const Choice& c,
                         const std::optional<Usage>& usage, const TokenIds& ids,
                         bool with_fingerprint) {
  std::string out;
  out.reserve(256 + c.text.size());
  append_head(out, ctx, true);
  out += ",\"choices\":[{\"index\":" + std::to_string(c.index) + ',';
  if (ctx.endpoint == Endpoint::kCompletions) {
    out += "\"text\":" + json_quote(c.text) + ",\"logprobs\":";
    out += c.logprobs;
    out += ",\"finish_reason\":" + finish_json(c.finish_reason) + ",\"stop_reason\":";
    out += c.finish_reason.empty() ? std::string_view("null") : c.stop_reason;
    out += ",\"prompt_token_ids\":";
    append_ids(out, ids.prompt, ids.enabled);
    out += ",\"token_ids\":";
  } else {
    out += "\"delta\":{\"content\":" + json_quote(c.text) + "},\"logprobs\":";
    out += c.logprobs;
    out += ",\"finish_reason\":" + finish_json(c.finish_reason);
    if (!c.finish_reason.empty()) {
      out += ",\"stop_reason\":";
      out += c.stop_reason;
    }
    out += ",\"token_ids\":";
  }
  append_ids(out, c.token_ids, ids.enabled);
  out += "}]";
  if (usage) {
    out += ",\"usage\":";
    append_usage(out, *usage, false);
  }
  if (with_fingerprint && !ctx.fingerprint.empty()) {
    out += ",\"system_fingerprint\":" + json_quote(ctx.fingerprint);
  }
  out += '}';
  return out;
}

std::string format_chunk(const ResponseContext& ctx, std::string_view text,
                         std::string_view finish_reason, const std::optional<Usage>& usage,
                         const TokenIds& ids, bool with_fingerprint) {
  return format_chunk(ctx, Choice{0, text, finish_reason, "null", ids.output}, usage, ids,
                      with_fingerprint);
}

std::string format_role_chunk(const ResponseContext& ctx, const std::optional<Usage>& usage,
                              std::uint32_t index) {
  std::string out;
  append_head(out, ctx, true);
  out += ",\"choices\":[{\"index\":" + std::to_string(index) +
         ",\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
         "\"logprobs\":null,\"finish_reason\":null}]";
  if (usage) {
    out += ",\"usage\":";
    append_usage(out, *usage, false);
  }
  out += ",\"prompt_token_ids\":null,\"prompt_text\":null}";
  return out;
}

std::string format_usage_chunk(const ResponseContext& ctx, const Usage& usage) {
  std::string out;
  append_head(out, ctx, true);
  out += ",\"choices\":[],\"usage\":";
  append_usage(out, usage, false);
  if (!ctx.fingerprint.empty()) out += ",\"system_fingerprint\":" + json_quote(ctx.fingerprint);
  out += '}';
  return out;
}

std::string format_stream_error(std::string_view message, std::string_view type, int code) {
  return "{\"error\": {\"message\": " + json_quote(message) + ", \"type\": " + json_quote(type) +
         ", \"param\": null, \"code\": " + std::to_string(code) + "}}";
}

}  // namespace omni::sim
