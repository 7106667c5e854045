#include "sim/chat_codec.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <map>
#include <string>
#include <variant>

#include "omni/chat/template.hpp"

namespace omni::sim {
namespace json = boost::json;
namespace {

// A template parsed once at start, or the reason it cannot be used.
using ParsedTemplate = std::variant<chat::Template, Error>;

ParsedTemplate parse_template(std::string_view source) {
  auto parsed = chat::Template::parse(source);
  if (!parsed)
    return make_error(ErrorCode::kInvalidArgument, "chat template: " + parsed.error().message);
  return std::move(*parsed);
}

// tokenizer_config's chat_template: one string is "default"; a list names each template.
std::map<std::string, ParsedTemplate, std::less<>> parse_model_templates(
    const json::object& config) {
  std::map<std::string, ParsedTemplate, std::less<>> out;
  auto it = config.find("chat_template");
  if (it == config.end()) return out;
  if (it->value().is_string()) {
    out.emplace("default", parse_template(it->value().get_string()));
  } else if (it->value().is_array()) {
    for (const json::value& entry : it->value().get_array()) {
      const json::object* named = entry.if_object();
      if (!named) continue;
      auto name = named->find("name");
      auto source = named->find("template");
      if (name == named->end() || source == named->end() || !name->value().is_string() ||
          !source->value().is_string()) {
        continue;
      }
      out.emplace(std::string(name->value().get_string()),
                  parse_template(source->value().get_string()));
    }
  }
  return out;
}

bool has_tools(const json::object& request) {
  auto tools = request.find("tools");
  return tools != request.end() && !tools->value().is_null();
}

class ChatTemplateCodec final : public TextCodec {
 public:
  ChatTemplateCodec(std::unique_ptr<TextCodec> inner, json::object config)
      : inner_(std::move(inner)),
        config_(std::move(config)),
        templates_(parse_model_templates(config_)) {}

  std::vector<std::uint32_t> encode(std::string_view text) const override {
    return inner_->encode(text);
  }
  std::vector<std::uint32_t> encode_with_special_tokens(std::string_view text) const override {
    return inner_->encode_with_special_tokens(text);
  }
  std::string decode(std::span<const std::uint32_t> tokens) const override {
    return inner_->decode(tokens);
  }
  std::string token_text(std::uint32_t token) const override { return inner_->token_text(token); }
  std::uint32_t vocab_size() const override { return inner_->vocab_size(); }
  std::span<const std::uint32_t> generatable() const override { return inner_->generatable(); }

  Result<std::string> render_chat(const json::object& request,
                                  const ChatRenderOptions& options) const override {
    chat::ChatOptions chat_options;
    chat_options.add_generation_prompt = options.add_generation_prompt;
    if (!options.chat_template.empty()) {
      ParsedTemplate own = parse_template(options.chat_template);
      if (auto* error = std::get_if<Error>(&own)) return *error;
      return chat::render_chat(std::get<chat::Template>(own), request, config_, chat_options);
    }
    if (templates_.empty()) return inner_->render_chat(request, options);
    auto it = has_tools(request) ? templates_.find("tool_use") : templates_.end();
    if (it == templates_.end()) it = templates_.find("default");
    if (it == templates_.end()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "the model's chat templates have no \"default\" template");
    }
    if (auto* error = std::get_if<Error>(&it->second)) return *error;
    return chat::render_chat(std::get<chat::Template>(it->second), request, config_, chat_options);
  }

  bool has_model_template() const { return !templates_.empty(); }

 private:
  std::unique_ptr<TextCodec> inner_;
  json::object config_;
  std::map<std::string, ParsedTemplate, std::less<>> templates_;
};

}  // namespace

std::unique_ptr<TextCodec> with_chat_templates(std::unique_ptr<TextCodec> inner,
                                               std::string_view tokenizer_config_json) {
  boost::system::error_code ec;
  json::value config =
      tokenizer_config_json.empty() ? json::value() : json::parse(tokenizer_config_json, ec);
  json::object object = !ec && config.is_object() ? std::move(config.get_object()) : json::object();
  return std::make_unique<ChatTemplateCodec>(std::move(inner), std::move(object));
}

bool has_model_chat_template(const TextCodec& codec) {
  const auto* templated = dynamic_cast<const ChatTemplateCodec*>(&codec);
  return templated && templated->has_model_template();
}

}  // namespace omni::sim
