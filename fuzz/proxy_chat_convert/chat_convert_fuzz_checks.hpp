// The properties fuzz_proxy_chat_convert checks on each input, shared with the unit test that
// replays the corpus. Header-only so that both compile it with their own flags.
//
// The input is read three ways: as a client's chat body, as one engine SSE payload, and as an
// engine's non-streaming body. For any bytes: nothing crashes; a converted request is a valid
// JSON object with a token-id prompt, no messages, and every member it does not own copied
// byte for byte; converted engine output is valid JSON (or [DONE]).
#pragma once

#include <string>
#include <string_view>

#include "omni/proxy/chat_convert.hpp"
#include "omni/proxy/rewrite.hpp"

namespace omni::proxy::fuzz {

// A character-level tokenizer (printable ASCII, everything else <unk>) and a small template:
// enough to drive every path of the conversion without model files.
inline const tokenizer::Tokenizer& toy_tokenizer() {
  static const std::shared_ptr<const tokenizer::Tokenizer> tok = [] {
    std::string vocab = "{\"<unk>\":0";
    for (int c = 32; c < 127; ++c) {
      std::string key = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                                    : std::string(1, static_cast<char>(c));
      vocab += ",\"" + key + "\":" + std::to_string(c);
    }
    vocab += "}";
    const std::string json =
        R"({"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,)"
        R"("post_processor":null,"decoder":null,"model":{"type":"BPE","unk_token":"<unk>",)"
        R"("vocab":)" +
        vocab + R"(,"merges":[]}})";
    auto loaded = tokenizer::Tokenizer::from_json(json);
    return loaded.ok() ? *loaded : nullptr;
  }();
  return *tok;
}

inline const ChatPromptTemplate& toy_template() {
  static const ChatPromptTemplate tmpl = [] {
    auto parsed = chat::Template::parse(
        "{% for m in messages %}{% if m.role == 'robot' %}{{ raise_exception('no robots') }}{% "
        "endif %}"
        "<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% "
        "endif %}");
    return ChatPromptTemplate{std::make_shared<const chat::Template>(std::move(*parsed)), {}};
  }();
  return tmpl;
}

inline const JsonMember* find_chat_member(const std::vector<JsonMember>& members,
                                          std::string_view key) {
  for (const auto& m : members) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

inline std::string check_request(std::string_view input) {
  auto converted = chat_to_completion(input, toy_tokenizer(), toy_template());
  if (!converted.ok() || !std::holds_alternative<ChatConversion>(*converted)) return {};
  const ChatConversion& c = std::get<ChatConversion>(*converted);
  auto out = scan_object(c.completion_body);
  if (!out.ok()) return "completion body is not a JSON object: " + c.completion_body;
  const JsonMember* prompt = find_chat_member(*out, "prompt");
  if (!prompt || prompt->value.front() != '[') return "completion body has no token-id prompt";
  if (find_chat_member(*out, "messages")) return "completion body kept messages";
  if (!find_chat_member(*out, "max_tokens")) return "completion body has no max_tokens";
  auto original = scan_object(input);
  if (!original.ok()) return "converted a body that is not an object";
  for (const JsonMember& m : *original) {
    static const std::string_view owned[] = {"messages", "max_tokens", "max_completion_tokens",
                                             "prompt"};
    bool is_owned = false;
    for (auto key : owned) is_owned = is_owned || m.key == key;
    const JsonMember* kept = find_chat_member(*out, m.key);
    if (!is_owned && kept && kept->value != m.value)
      return "completion body changed member " + m.key;
  }
  return {};
}

inline std::string check_output(std::string_view input) {
  ChatConversion conversion;
  conversion.prompt_tokens = 7;
  conversion.continuous_usage_stats = input.size() % 2 == 0;
  ChatStreamConverter stream(conversion);
  for (int round = 0; round < 2; ++round) {  // the second round has the role chunk sent already
    auto events = stream.convert(input);
    if (!events.ok()) continue;
    for (const std::string& event : *events) {
      if (event != "[DONE]" && !scan_object(event).ok())
        return "stream event is not a JSON object: " + event;
    }
  }
  auto body = completion_to_chat_response(input);
  if (body.ok() && !scan_object(*body).ok()) return "chat body is not a JSON object: " + *body;
  (void)stream_error_payload(input);
  return {};
}

// An empty string when every property holds, else what broke.
inline std::string check_chat_convert(std::string_view input) {
  std::string failure = check_request(input);
  if (failure.empty()) failure = check_output(input);
  return failure;
}

}  // namespace omni::proxy::fuzz
