#include "omni/proxy/chat_convert.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <optional>

#include "json_scan.hpp"
#include "omni/proxy/rewrite.hpp"

namespace omni::proxy {
namespace json = boost::json;
namespace {

// --- reading raw JSON that scan_object already validated -----------------------------------

const JsonMember* member(const std::vector<JsonMember>& members, std::string_view key) {
  for (const JsonMember& m : members) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

std::string_view raw_or(const std::vector<JsonMember>& members, std::string_view key,
                        std::string_view fallback) {
  const JsonMember* m = member(members, key);
  return m ? m->value : fallback;
}

// The elements of a JSON array known to be valid, as raw spans.
std::vector<std::string_view> split_valid_array(std::string_view array) {
  std::vector<std::string_view> out;
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::size_t i = 1;  // past '['
  while (i < array.size()) {
    while (i < array.size() && space(array[i])) ++i;
    if (i >= array.size() || array[i] == ']') break;
    const std::size_t start = i;
    int depth = 0;
    bool in_string = false;
    for (; i < array.size(); ++i) {
      const char c = array[i];
      if (in_string) {
        if (c == '\\')
          ++i;  // the escaped character cannot end the string
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    std::size_t end = i;
    while (end > start && space(array[end - 1])) --end;
    out.push_back(array.substr(start, end - start));
    if (i < array.size() && array[i] == ',') ++i;
  }
  return out;
}

std::string quote(std::string_view text) { return json::serialize(json::string(text)); }

// "cmpl-<base>" → "chatcmpl-<base>": vLLM builds both from the same base request id.
std::string chat_id(std::string_view raw_id) {
  constexpr std::string_view kCompletion = "\"cmpl-";
  if (raw_id.substr(0, kCompletion.size()) == kCompletion) {
    return "\"chatcmpl-" + std::string(raw_id.substr(kCompletion.size()));
  }
  return std::string(raw_id);
}

// --- the request ---------------------------------------------------------------------------

const json::value* present(const json::object& body, std::string_view key) {
  auto it = body.find(key);
  return it == body.end() || it->value().is_null() ? nullptr : &it->value();
}

bool is_true(const json::value* v) { return v && v->is_bool() && v->get_bool(); }
bool is_integer(const json::value& v, std::int64_t expected) {
  return v.is_int64() && v.get_int64() == expected;
}
bool is_string(const json::value& v, std::string_view expected) {
  return v.is_string() && v.get_string() == expected;
}

bool positive_integer(const json::value& v) {
  // Up to vLLM's own bound (int32): beyond it the engine's error would name `max_tokens`.
  constexpr std::int64_t kMax = (std::int64_t{1} << 31) - 1;
  return (v.is_int64() && v.get_int64() >= 1 && v.get_int64() <= kMax) ||
         (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(kMax));
}

// The first reason the conversion would not be exact, or nothing. Fields of the wrong type
// are left to the engine, whose 400 then names them exactly as vLLM does.
std::optional<std::string> refusal(const json::object& body) {
  const json::value* tool_choice = present(body, "tool_choice");
  const json::value* response_format = present(body, "response_format");
  const json::value* top_logprobs = present(body, "top_logprobs");
  const json::value* n = present(body, "n");
  const json::value* messages = present(body, "messages");
  if (present(body, "tools") || present(body, "functions") || present(body, "function_call"))
    return "tools";
  if (tool_choice && !is_string(*tool_choice, "none")) return "tool_choice";
  if (response_format &&
      !(response_format->is_object() && response_format->get_object().size() == 1 &&
        response_format->get_object().contains("type") &&
        is_string(response_format->get_object().at("type"), "text"))) {
    return "response_format";
  }
  if (is_true(present(body, "logprobs")) || (top_logprobs && !is_integer(*top_logprobs, 0)) ||
      present(body, "prompt_logprobs")) {
    return "logprobs";
  }
  if (n && !is_integer(*n, 1)) return "n";
  if (is_true(present(body, "echo"))) return "echo";
  if (is_true(present(body, "return_token_ids")) || is_true(present(body, "return_prompt_text"))) {
    return "return_token_ids";
  }
  if (is_true(present(body, "continue_final_message"))) return "continue_final_message";
  if (present(body, "chat_template")) return "chat_template";
  if (present(body, "reasoning_effort")) return "reasoning_effort";
  if (!messages || !messages->is_array()) return "messages";
  for (std::string_view key : {"max_tokens", "max_completion_tokens"}) {
    if (const json::value* v = present(body, key); v && !positive_integer(*v)) return "max_tokens";
  }
  for (std::string_view key :
       {"add_generation_prompt", "add_special_tokens", "stream", "logprobs", "echo"}) {
    if (const json::value* v = present(body, key); v && !v->is_bool()) return "field_type";
  }
  const json::value* options = present(body, "stream_options");
  if (options && !options->is_object()) return "field_type";
  return std::nullopt;
}

// Chat-only members the conversion consumes (rendered into the prompt or meaningless once it
// is ids), and completions-only members a chat request may carry that vLLM's chat route ignores.
bool dropped(std::string_view key) {
  static constexpr std::string_view kDropped[] = {"add_generation_prompt",
                                                  "continue_final_message",
                                                  "chat_template_kwargs",
                                                  "documents",
                                                  "add_special_tokens",
                                                  "logprobs",
                                                  "top_logprobs",
                                                  "tools",
                                                  "tool_choice",
                                                  "parallel_tool_calls",
                                                  "functions",
                                                  "function_call",
                                                  "response_format",
                                                  "chat_template",
                                                  "reasoning_effort",
                                                  "include_reasoning",
                                                  "return_prompt_text",
                                                  "prompt",
                                                  "suffix",
                                                  "echo",
                                                  "prompt_embeds"};
  return std::find(std::begin(kDropped), std::end(kDropped), key) != std::end(kDropped);
}

std::string id_list(const std::vector<tokenizer::TokenId>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

// Every member of the chat body in order, with messages → prompt and max_completion_tokens →
// max_tokens; an explicit "max_tokens":null when neither limit is set, because the chat
// default (the rest of the context) is what vLLM's completions route gives a null.
std::string completion_body(const std::vector<JsonMember>& members, const std::string& prompt_ids) {
  const JsonMember* max_completion = member(members, "max_completion_tokens");
  const bool use_max_completion = max_completion && max_completion->value != "null";
  std::string out = "{";
  bool limit_set = false;
  auto append = [&out](std::string_view key, std::string_view raw) {
    if (out.size() > 1) out += ',';
    out += quote(key);
    out += ':';
    out += raw;
  };
  for (const JsonMember& m : members) {
    if (m.key == "messages") {
      append("prompt", prompt_ids);
    } else if (m.key == "max_completion_tokens") {
      if (use_max_completion) append("max_tokens", m.value);
      limit_set = limit_set || use_max_completion;
    } else if (m.key == "max_tokens") {
      if (!use_max_completion) append("max_tokens", m.value);
      limit_set = limit_set || !use_max_completion;
    } else if (!dropped(m.key)) {
      append(m.key, m.value);
    }
  }
  if (!limit_set) append("max_tokens", "null");
  return out + "}";
}

bool has_duplicate_keys(const std::vector<JsonMember>& members) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    for (std::size_t j = i + 1; j < members.size(); ++j) {
      if (members[i].key == members[j].key) return true;
    }
  }
  return false;
}

json::parse_options deep_parse() {
  json::parse_options options;
  options.max_depth = 256;  // as scan_object
  return options;
}

// --- the response --------------------------------------------------------------------------

struct CompletionHead {
  std::string id;  // already "chatcmpl-..."
  std::string_view created;
  std::string_view model;
  std::vector<std::string_view> choices;
};

Result<CompletionHead> completion_head(const std::vector<JsonMember>& members) {
  const JsonMember* object = member(members, "object");
  const JsonMember* choices = member(members, "choices");
  const JsonMember* id = member(members, "id");
  if (!object || object->value != "\"text_completion\"" || !choices ||
      choices->value.front() != '[' || !id) {
    return make_error(ErrorCode::kProtocol, "engine output is not a text_completion object");
  }
  CompletionHead head{chat_id(id->value), raw_or(members, "created", "0"),
                      raw_or(members, "model", "null"), split_valid_array(choices->value)};
  for (std::string_view choice : head.choices) {
    if (choice.front() != '{')
      return make_error(ErrorCode::kProtocol, "engine output has a choice that is not an object");
  }
  return head;
}

void append_head(std::string& out, const CompletionHead& head, std::string_view object) {
  out += "{\"id\":";
  out += head.id;
  out += ",\"object\":\"";
  out += object;
  out += "\",\"created\":";
  out += head.created;
  out += ",\"model\":";
  out += head.model;
}

struct ChoiceParts {
  std::string_view index, text, finish_reason, stop_reason, token_ids;
};

Result<ChoiceParts> choice_parts(std::string_view choice) {
  const std::vector<JsonMember> m = detail::scan_valid_object(choice);
  ChoiceParts parts{raw_or(m, "index", "0"), raw_or(m, "text", ""),
                    raw_or(m, "finish_reason", "null"), raw_or(m, "stop_reason", "null"),
                    raw_or(m, "token_ids", "null")};
  if (parts.text.empty() || parts.text.front() != '"') {
    return make_error(ErrorCode::kProtocol, "engine output has a choice without a text string");
  }
  return parts;
}

std::string usage_json(std::uint32_t prompt, std::uint32_t completion) {
  return "{\"prompt_tokens\":" + std::to_string(prompt) +
         ",\"total_tokens\":" + std::to_string(prompt + completion) +
         ",\"completion_tokens\":" + std::to_string(completion) + "}";
}

// The chat route's first chunk of a choice: the role, with empty content.
std::string role_chunk(const CompletionHead& head, std::string_view index,
                       std::optional<std::uint32_t> usage_prompt) {
  std::string out;
  append_head(out, head, "chat.completion.chunk");
  out += ",\"choices\":[{\"index\":";
  out += index;
  out +=
      ",\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":"
      "null}]";
  if (usage_prompt) out += ",\"usage\":" + usage_json(*usage_prompt, 0);
  out += ",\"prompt_token_ids\":null,\"prompt_text\":null}";
  return out;
}

Result<std::string> content_chunk(const std::vector<JsonMember>& members,
                                  const CompletionHead& head) {
  std::string out;
  append_head(out, head, "chat.completion.chunk");
  out += ",\"choices\":[";
  for (std::size_t i = 0; i < head.choices.size(); ++i) {
    auto parts = choice_parts(head.choices[i]);
    if (!parts) return std::move(parts).error();
    if (i) out += ',';
    out += "{\"index\":";
    out += parts->index;
    out += ",\"delta\":{\"content\":";
    out += parts->text;
    out += "},\"logprobs\":null,\"finish_reason\":";
    out += parts->finish_reason;
    if (parts->finish_reason != "null") {
      out += ",\"stop_reason\":";
      out += parts->stop_reason;
    }
    out += ",\"token_ids\":";
    out += parts->token_ids;
    out += '}';
  }
  out += ']';
  // What follows the choices (usage, system_fingerprint) is the same in both routes.
  for (const JsonMember& m : members) {
    if (m.key == "id" || m.key == "object" || m.key == "created" || m.key == "model" ||
        m.key == "choices")
      continue;
    out += ',' + quote(m.key) + ':';
    out += m.value;
  }
  return out + "}";
}

}  // namespace

Result<ChatPromptTemplate> load_chat_template(const tokenizer::Tokenizer& tok) {
  boost::system::error_code ec;
  json::value config = json::parse(tok.config_json(), ec);
  if (ec || !config.is_object())
    return make_error(ErrorCode::kInvalidArgument, "tokenizer_config.json is not an object");
  const json::value* source = present(config.get_object(), "chat_template");
  std::string_view text;
  if (source && source->is_string()) {
    text = source->get_string();
  } else if (source && source->is_array()) {
    for (const json::value& entry : source->get_array()) {
      const json::object* named = entry.if_object();
      if (named && named->contains("name") && is_string(named->at("name"), "default") &&
          named->contains("template") && named->at("template").is_string()) {
        text = named->at("template").get_string();
      }
    }
  }
  if (text.empty())
    return make_error(ErrorCode::kNotFound, "tokenizer_config has no chat_template");
  auto parsed = chat::Template::parse(text);
  if (!parsed)
    return make_error(ErrorCode::kInvalidArgument, "chat template: " + parsed.error().message);
  return ChatPromptTemplate{std::make_shared<const chat::Template>(std::move(*parsed)),
                            std::move(config.get_object())};
}

Result<ChatAsCompletion> chat_to_completion(std::string_view chat_body,
                                            const tokenizer::Tokenizer& tok,
                                            const ChatPromptTemplate& prompt_template) {
  auto members = scan_object(chat_body);
  if (!members) return std::move(members).error();
  if (has_duplicate_keys(*members)) return ChatAsCompletion{NotConvertible{"duplicate_key", {}}};
  boost::system::error_code ec;
  json::value parsed = json::parse(chat_body, ec, {}, deep_parse());
  if (ec || !parsed.is_object())
    return make_error(ErrorCode::kInvalidArgument, "chat body is not a JSON object");
  const json::object& body = parsed.get_object();
  if (auto reason = refusal(body)) return ChatAsCompletion{NotConvertible{*reason, {}}};
  if (!prompt_template.tmpl) return ChatAsCompletion{NotConvertible{"no_template", {}}};

  chat::ChatOptions options;
  const json::value* generation_prompt = present(body, "add_generation_prompt");
  options.add_generation_prompt = !generation_prompt || generation_prompt->get_bool();
  auto text =
      chat::render_chat(*prompt_template.tmpl, body, prompt_template.tokenizer_config, options);
  if (!text) return ChatAsCompletion{NotConvertible{"template_error", text.error().message}};
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = is_true(present(body, "add_special_tokens"));  // chat's default: off
  auto ids = tok.encode(*text, encode);
  if (!ids) return ChatAsCompletion{NotConvertible{"tokenizer_error", ids.error().message}};

  ChatConversion out;
  out.completion_body = completion_body(*members, id_list(*ids));
  out.prompt_tokens = static_cast<std::uint32_t>(ids->size());
  out.stream = is_true(present(body, "stream"));
  if (const json::value* so = present(body, "stream_options")) {
    out.include_usage = is_true(present(so->get_object(), "include_usage"));
    out.continuous_usage_stats =
        out.include_usage && is_true(present(so->get_object(), "continuous_usage_stats"));
  }
  return ChatAsCompletion{std::move(out)};
}

ChatStreamConverter::ChatStreamConverter(const ChatConversion& conversion)
    : prompt_tokens_(conversion.prompt_tokens),
      continuous_usage_(conversion.continuous_usage_stats) {}

Result<std::vector<std::string>> ChatStreamConverter::convert(std::string_view payload) {
  if (payload == "[DONE]") return std::vector<std::string>{std::string(payload)};
  auto members = scan_object(payload);
  if (!members)
    return make_error(ErrorCode::kProtocol,
                      "engine stream event is not JSON: " + members.error().message);
  if (!members->empty() && members->front().key == "error") {
    return std::vector<std::string>{std::string(payload)};  // the same event in both routes
  }
  auto head = completion_head(*members);
  if (!head) return std::move(head).error();
  std::vector<std::string> out;
  if (!role_sent_ && !head->choices.empty()) {
    // vLLM's chat route sends the role when the first output arrives, once per choice.
    for (std::string_view choice : head->choices) {
      auto parts = choice_parts(choice);
      if (!parts) return std::move(parts).error();
      out.push_back(role_chunk(
          *head, parts->index,
          continuous_usage_ ? std::optional<std::uint32_t>(prompt_tokens_) : std::nullopt));
    }
    role_sent_ = true;
  }
  auto chunk = content_chunk(*members, *head);
  if (!chunk) return std::move(chunk).error();
  out.push_back(std::move(*chunk));
  return out;
}

Result<std::string> completion_to_chat_response(std::string_view completion_body) {
  auto members = scan_object(completion_body);
  if (!members)
    return make_error(ErrorCode::kProtocol,
                      "engine response is not JSON: " + members.error().message);
  auto head = completion_head(*members);
  if (!head) return std::move(head).error();
  std::string out;
  out.reserve(completion_body.size() + 256);
  append_head(out, *head, "chat.completion");
  out += ",\"choices\":[";
  for (std::size_t i = 0; i < head->choices.size(); ++i) {
    auto parts = choice_parts(head->choices[i]);
    if (!parts) return std::move(parts).error();
    if (i) out += ',';
    out += "{\"index\":";
    out += parts->index;
    out += ",\"message\":{\"role\":\"assistant\",\"content\":";
    out += parts->text;
    out +=
        ",\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,\"tool_"
        "calls\":[],"
        "\"reasoning\":null},\"logprobs\":null,\"finish_reason\":";
    out += parts->finish_reason;
    out += ",\"stop_reason\":";
    out += parts->stop_reason;
    out += ",\"token_ids\":";
    out += parts->token_ids;
    out += '}';
  }
  out += "],\"service_tier\":";
  out += raw_or(*members, "service_tier", "null");
  out += ",\"system_fingerprint\":";
  out += raw_or(*members, "system_fingerprint", "null");
  out += ",\"usage\":";
  out += raw_or(*members, "usage", "null");
  out +=
      ",\"prompt_logprobs\":null,\"prompt_token_ids\":null,\"prompt_text\":null,\"kv_transfer_"
      "params\":";
  out += raw_or(*members, "kv_transfer_params", "null");
  return out + "}";
}

std::string stream_error_payload(std::string_view message) {
  return "{\"error\": {\"message\": " + quote(message) +
         ", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}";
}

}  // namespace omni::proxy
