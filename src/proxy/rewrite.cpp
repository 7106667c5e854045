#include "omni/proxy/rewrite.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <cstdint>
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

}  // namespace

// One validating scan (Boost.JSON's tokenizer, no DOM): the same verdicts and the same
// fields as parsing the body into a boost::json::value, without an allocation per value.
Result<RequestInfo> inspect_request(std::string_view body, Api api, BadRequest* bad,
                                    InspectLimits limits) {
  using detail::Kind;
  auto scanned = detail::scan_request(body, limits.max_depth);
  if (!scanned) return bad_request(bad, scanned.error().message, "");
  const detail::RequestFields& fields = *scanned;
  if (!fields.root_is_object) return bad_request(bad, "the request body must be a JSON object", "");

  RequestInfo info;
  if (fields.stream != Kind::kAbsent && fields.stream != Kind::kNull) {
    if (fields.stream != Kind::kBool)
      return bad_request(bad, "'stream' must be a boolean", "stream");
    info.stream = fields.stream_value;
  }
  info.include_usage = fields.include_usage;
  if (fields.model != Kind::kAbsent && fields.model != Kind::kNull) {
    if (fields.model != Kind::kString) return bad_request(bad, "'model' must be a string", "model");
    info.model = fields.model_value;
  }
  if (api == Api::kCompletions) {
    if (fields.prompt == Kind::kAbsent || fields.prompt == Kind::kNull) {
      return bad_request(bad, "'prompt' is required", "prompt");
    }
    info.prompt_tokens = fields.prompt_tokens;
    info.text_prompt = fields.prompt == Kind::kString;
    info.max_tokens = kCompletionsDefaultMaxTokens;
  } else {
    if (fields.messages != Kind::kArray) {
      return bad_request(bad, "'messages' must be a list of messages", "messages");
    }
    info.prompt_tokens = fields.message_tokens;
    info.max_tokens = kChatDefaultMaxTokens;
  }
  // vLLM: completions default to 16 when max_tokens is absent, but an explicit null means "no
  // bound"; chat has no default at all. max_completion_tokens wins over max_tokens.
  const bool completions = api == Api::kCompletions;
  const bool bounded_by_max_tokens =
      fields.max_tokens.has_value() || (completions && fields.max_tokens_kind == Kind::kAbsent);
  info.max_tokens_unbounded = !fields.max_completion_tokens && !bounded_by_max_tokens;
  if (fields.max_tokens) info.max_tokens = *fields.max_tokens;
  if (fields.max_completion_tokens) info.max_tokens = *fields.max_completion_tokens;
  info.proxy_owned_fields = fields.proxy_owned;
  if (fields.priority != Kind::kAbsent && fields.priority != Kind::kNull) {
    // vLLM's field is a Python int; the proxy bands priorities within 32 bits.
    if (fields.priority != Kind::kInt || !fields.priority_in_range ||
        fields.priority_value < INT32_MIN || fields.priority_value > INT32_MAX) {
      return bad_request(bad, "'priority' must be an integer in -2147483648..2147483647",
                         "priority");
    }
    info.priority = fields.priority_value;
  }
  return info;
}

std::string proxy_owned_field_names(std::uint32_t fields) {
  std::string names;
  const auto keys = detail::proxy_owned_keys();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if ((fields & (1u << i)) == 0) continue;
    if (!names.empty()) names += ",";
    names += keys[i];
  }
  return names;
}

Result<std::string> strip_proxy_owned(std::string_view body) {
  std::vector<JsonEdit> edits;
  for (const std::string_view key : detail::proxy_owned_keys()) {
    edits.push_back({std::string(key), std::nullopt});
  }
  return edit_object(body, edits);
}

std::optional<std::string> hide_transfer_params(std::string_view response_body) {
  // Cheap test first: almost every answer has no such member, or a null one.
  if (response_body.find("\"kv_transfer_params\"") == std::string_view::npos) return std::nullopt;
  auto members = scan_object(response_body);
  if (!members) return std::nullopt;
  bool exposed = false;
  for (const JsonMember& member : *members) {
    exposed = exposed || (member.key == "kv_transfer_params" && member.value != "null");
  }
  if (!exposed) return std::nullopt;
  auto hidden = edit_object(response_body, {JsonEdit{"kv_transfer_params", "null"}});
  if (!hidden) return std::nullopt;
  return std::move(*hidden);
}

Result<std::vector<JsonMember>> scan_object(std::string_view json_text) {
  auto is_object = detail::validate_json(json_text, 256);
  if (!is_object) return std::move(is_object).error();
  if (!*is_object) return make_error(ErrorCode::kInvalidArgument, "not a JSON object");
  return detail::scan_valid_object(json_text);
}

Result<std::string> edit_object(std::string_view object, const std::vector<JsonEdit>& edits) {
  auto members = scan_object(object);
  if (!members) return std::move(members).error();
  return edit_members(*members, edits);
}

std::string edit_members(std::span<const JsonMember> members, const std::vector<JsonEdit>& edits) {
  std::vector<bool> done(edits.size(), false);
  std::size_t size = 2;
  for (const JsonMember& member : members) size += member.key.size() + member.value.size() + 4;
  std::string out;
  out.reserve(size + 256);
  out.push_back('{');
  auto append_member = [&out](std::string_view key, std::string_view value) {
    if (out.size() > 1) out.push_back(',');
    out += json_quote(key);
    out.push_back(':');
    out += value;
  };
  for (const JsonMember& member : members) {
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
  return prefill_body(std::span<const JsonMember>(*members));
}

std::string prefill_body(std::span<const JsonMember> members) {
  bool has_max_completion_tokens = false;
  for (const JsonMember& member : members) {
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
  return edit_members(members, edits);
}

Result<std::string> decode_body(std::string_view body, std::string_view kv_transfer_params) {
  auto members = scan_object(body);
  if (!members) return std::move(members).error();
  return decode_body(std::span<const JsonMember>(*members), kv_transfer_params);
}

std::string decode_body(std::span<const JsonMember> members, std::string_view kv_transfer_params) {
  return edit_members(members, {{"kv_transfer_params", std::string(kv_transfer_params)}});
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
  auto members = scan_object(body);
  if (!members) return std::move(members).error();
  return bootstrap_body(std::span<const JsonMember>(*members), bootstrap);
}

std::string bootstrap_body(std::span<const JsonMember> members, const Bootstrap& bootstrap) {
  return edit_members(members, {
                                   {"bootstrap_host", json_quote(bootstrap.host)},
                                   {"bootstrap_port", std::to_string(bootstrap.port)},
                                   {"bootstrap_room", std::to_string(bootstrap.room)},
                               });
}

std::string json_quote(std::string_view text) {
  return json::serialize(json::string_view(text.data(), text.size()));
}

}  // namespace omni::proxy
