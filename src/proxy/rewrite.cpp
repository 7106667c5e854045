#include "omni/proxy/rewrite.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <utility>

#include "json_scan.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

// A chat request without max_tokens may generate up to the context length; for load
// accounting we assume this many output tokens.
constexpr std::uint64_t kChatDefaultMaxTokens = 512;
constexpr std::uint64_t kCompletionsDefaultMaxTokens = 16;  // vLLM's default

Error bad_request(BadRequest* bad, std::string message, std::string param) {
  if (bad) *bad = BadRequest{message, std::move(param)};
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

std::uint64_t text_tokens(std::size_t bytes) { return bytes == 0 ? 0 : (bytes + 3) / 4; }

// Token ids count one each; text one per 4 bytes; lists add up their items.
std::uint64_t prompt_tokens_of(const json::value& prompt) {
  if (prompt.is_string()) return text_tokens(prompt.get_string().size());
  if (prompt.is_int64() || prompt.is_uint64()) return 1;
  if (!prompt.is_array()) return 0;
  std::uint64_t total = 0;
  for (const json::value& item : prompt.get_array()) total += prompt_tokens_of(item);
  return total;
}

std::uint64_t message_tokens(const json::array& messages) {
  std::uint64_t total = 0;
  for (const json::value& message : messages) {
    if (!message.is_object()) continue;
    const json::value* content = message.get_object().if_contains("content");
    if (!content) continue;
    if (content->is_string()) {
      total += text_tokens(content->get_string().size());
    } else if (content->is_array()) {
      for (const json::value& part : content->get_array()) {
        if (!part.is_object()) continue;
        if (const json::value* text = part.get_object().if_contains("text"); text && text->is_string()) {
          total += text_tokens(text->get_string().size());
        }
      }
    }
  }
  return total;
}

std::optional<std::uint64_t> non_negative_int(const json::value* value) {
  if (!value) return std::nullopt;
  if (value->is_uint64()) return value->get_uint64();
  if (value->is_int64() && value->get_int64() >= 0) return static_cast<std::uint64_t>(value->get_int64());
  return std::nullopt;
}

Result<json::value> parse_json(std::string_view text, std::size_t max_depth) {
  json::parse_options options;
  options.max_depth = max_depth;
  boost::system::error_code ec;
  json::value value = json::parse(text, ec, {}, options);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "invalid JSON: " + ec.message());
  return value;
}

}  // namespace

Result<RequestInfo> inspect_request(std::string_view body, Api api, BadRequest* bad,
                                    InspectLimits limits) {
  auto parsed = parse_json(body, limits.max_depth);
  if (!parsed) return bad_request(bad, parsed.error().message, "");
  if (!parsed->is_object()) return bad_request(bad, "the request body must be a JSON object", "");
  const json::object& object = parsed->get_object();

  RequestInfo info;
  if (const json::value* stream = object.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) return bad_request(bad, "'stream' must be a boolean", "stream");
    info.stream = stream->get_bool();
  }
  if (const json::value* options = object.if_contains("stream_options");
      options && options->is_object()) {
    const json::value* usage = options->get_object().if_contains("include_usage");
    info.include_usage = usage && usage->is_bool() && usage->get_bool();
  }
  if (const json::value* model = object.if_contains("model"); model && !model->is_null()) {
    if (!model->is_string()) return bad_request(bad, "'model' must be a string", "model");
    info.model = std::string(model->get_string());
  }
  if (api == Api::kCompletions) {
    const json::value* prompt = object.if_contains("prompt");
    if (!prompt || prompt->is_null()) return bad_request(bad, "'prompt' is required", "prompt");
    info.prompt_tokens = prompt_tokens_of(*prompt);
    info.max_tokens = kCompletionsDefaultMaxTokens;
  } else {
    const json::value* messages = object.if_contains("messages");
    if (!messages || !messages->is_array()) {
      return bad_request(bad, "'messages' must be a list of messages", "messages");
    }
    info.prompt_tokens = message_tokens(messages->get_array());
    info.max_tokens = kChatDefaultMaxTokens;
  }
  if (auto limit = non_negative_int(object.if_contains("max_tokens"))) info.max_tokens = *limit;
  if (auto limit = non_negative_int(object.if_contains("max_completion_tokens"))) {
    info.max_tokens = *limit;
  }
  return info;
}

Result<std::vector<JsonMember>> scan_object(std::string_view json_text) {
  auto parsed = parse_json(json_text, 256);
  if (!parsed) return std::move(parsed).error();
  if (!parsed->is_object()) return make_error(ErrorCode::kInvalidArgument, "not a JSON object");
  return detail::scan_valid_object(json_text);
}

Result<std::string> edit_object(std::string_view object, const std::vector<JsonEdit>& edits) {
  auto members = scan_object(object);
  if (!members) return std::move(members).error();
  std::vector<bool> done(edits.size(), false);
  std::string out;
  out.reserve(object.size() + 256);
  out.push_back('{');
  auto append_member = [&out](std::string_view key, std::string_view value) {
    if (out.size() > 1) out.push_back(',');
    out += json_quote(key);
    out.push_back(':');
    out += value;
  };
  for (const JsonMember& member : *members) {
    std::size_t edit = 0;
    while (edit < edits.size() && edits[edit].key != member.key) ++edit;
    if (edit == edits.size()) {
      append_member(member.key, member.value);
      continue;
    }
    if (done[edit] || !edits[edit].raw_value) continue;  // removed, or a later duplicate
    append_member(member.key, *edits[edit].raw_value);
    done[edit] = true;
  }
  for (std::size_t i = 0; i < edits.size(); ++i) {
    if (!done[i] && edits[i].raw_value) append_member(edits[i].key, *edits[i].raw_value);
  }
  out.push_back('}');
  return out;
}

Result<std::string> prefill_body(std::string_view body) {
  auto members = scan_object(body);
  if (!members) return std::move(members).error();
  bool has_max_completion_tokens = false;
  for (const JsonMember& member : *members) {
    if (member.key == "max_completion_tokens") has_max_completion_tokens = true;
  }
  std::vector<JsonEdit> edits = {
      {"stream", "false"},
      {"max_tokens", "1"},
      {"stream_options", std::nullopt},
      {"min_tokens", std::nullopt},
      {"min_completion_tokens", std::nullopt},
      {"kv_transfer_params",
       R"({"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,)"
       R"("remote_block_ids":null,"remote_host":null,"remote_port":null})"},
  };
  if (has_max_completion_tokens) edits.push_back({"max_completion_tokens", "1"});
  return edit_object(body, edits);
}

Result<std::string> decode_body(std::string_view body, std::string_view kv_transfer_params) {
  const std::vector<JsonEdit> edits = {{"kv_transfer_params", std::string(kv_transfer_params)}};
  return edit_object(body, edits);
}

Result<std::optional<std::string>> kv_transfer_params_of(std::string_view response_body) {
  auto members = scan_object(response_body);
  if (!members) return std::move(members).error();
  std::optional<std::string> params;
  for (const JsonMember& member : *members) {
    if (member.key != "kv_transfer_params") continue;
    // Usable: a non-empty object. The scanner hands back valid JSON, so '{' then '}' after
    // optional spaces is the only empty form.
    const std::string_view value = member.value;
    const bool is_object = !value.empty() && value.front() == '{';
    const bool is_empty = value.find_first_not_of(" \t\r\n", 1) == value.size() - 1;
    params = is_object && !is_empty ? std::optional<std::string>(value) : std::nullopt;
  }
  return params;
}

Result<std::string> bootstrap_body(std::string_view body, const Bootstrap& bootstrap) {
  const std::vector<JsonEdit> edits = {
      {"bootstrap_host", json_quote(bootstrap.host)},
      {"bootstrap_port", std::to_string(bootstrap.port)},
      {"bootstrap_room", std::to_string(bootstrap.room)},
  };
  return edit_object(body, edits);
}

std::string json_quote(std::string_view text) {
  return json::serialize(json::string_view(text.data(), text.size()));
}

}  // namespace omni::proxy
