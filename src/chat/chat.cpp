// render_chat: the context transformers gives a chat template, built from an OpenAI chat
// request and a tokenizer_config.json.
#include <string>

#include <boost/json.hpp>

#include "omni/chat/template.hpp"

namespace omni::chat {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// "bos_token": "<s>" or {"__type": "AddedToken", "content": "<s>", ...}; null is left out.
const boost::json::string* token_text(const boost::json::value& v) {
  if (v.is_string()) return &v.get_string();
  if (v.is_object()) {
    const auto* content = v.get_object().if_contains("content");
    if (content != nullptr && content->is_string()) return &content->get_string();
  }
  return nullptr;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// OpenAI content parts [{"type": "text", "text": "..."}] become one string, the parts joined
// with newlines (as vLLM does for text-only templates); other part types are refused.
Result<boost::json::value> flatten_content(const boost::json::value& content) {
  if (!content.is_array()) return content;
  std::string text;
  bool first = true;
  for (const auto& part : content.get_array()) {
    const auto* obj = part.if_object();
    const auto* type = obj != nullptr ? obj->if_contains("type") : nullptr;
    const auto* value = obj != nullptr ? obj->if_contains("text") : nullptr;
    if (type == nullptr || !type->is_string() || type->get_string() != "text" || value == nullptr ||
        !value->is_string()) {
      return invalid("messages: only text content parts are supported");
    }
    if (!first) text += '\n';
    text += value->get_string();
    first = false;
  }
  return boost::json::value(text);
}

Result<boost::json::array> normalize_messages(const boost::json::value* messages) {
  if (messages == nullptr || !messages->is_array())
    return invalid("request: 'messages' must be an array");
  boost::json::array out;
  for (const auto& message : messages->get_array()) {
    if (!message.is_object()) return invalid("request: every message must be an object");
    boost::json::object copy = message.get_object();
    if (auto* content = copy.if_contains("content")) {
      auto flat = flatten_content(*content);
      if (!flat.ok()) return std::move(flat).error();
      *content = std::move(flat).value();
    }
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace

Result<std::string> render_chat(const Template& tmpl, const boost::json::object& request,
                                const boost::json::object& tokenizer_config,
                                const ChatOptions& options) {
  boost::json::object context;
  for (const auto& kv : tokenizer_config) {
    if (!ends_with(kv.key(), "_token")) continue;
    if (const auto* text = token_text(kv.value())) context[kv.key()] = *text;
  }
  auto messages = normalize_messages(request.if_contains("messages"));
  if (!messages.ok()) return std::move(messages).error();
  context["messages"] = std::move(messages).value();
  if (const auto* tools = request.if_contains("tools"); tools != nullptr && !tools->is_null()) {
    if (!tools->is_array()) return invalid("request: 'tools' must be an array");
    context["tools"] = *tools;
  }
  if (const auto* documents = request.if_contains("documents");
      documents != nullptr && !documents->is_null()) {
    context["documents"] = *documents;
  }
  if (const auto* kwargs = request.if_contains("chat_template_kwargs");
      kwargs != nullptr && kwargs->is_object()) {
    for (const auto& kv : kwargs->get_object()) {
      if (kv.key() == "messages" || kv.key() == "tools") continue;
      context[kv.key()] = kv.value();
    }
  }
  context["add_generation_prompt"] = options.add_generation_prompt;
  return tmpl.render(context, options.limits, options.now_unix_seconds);
}

Result<std::string> render_chat(const boost::json::object& request,
                                const boost::json::object& tokenizer_config,
                                const ChatOptions& options) {
  const auto* source = tokenizer_config.if_contains("chat_template");
  if (source == nullptr || source->is_null()) {
    return make_error(ErrorCode::kNotFound, "tokenizer_config has no chat_template");
  }
  std::string text;
  if (source->is_string()) {
    text = source->get_string();
  } else if (source->is_array()) {
    // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]: transformers picks
    // "tool_use" when tools are given and it exists, else "default".
    const bool has_tools = request.contains("tools") && !request.at("tools").is_null();
    std::string fallback;
    for (const auto& entry : source->get_array()) {
      const auto* obj = entry.if_object();
      if (obj == nullptr) continue;
      const auto* name = obj->if_contains("name");
      const auto* body = obj->if_contains("template");
      if (name == nullptr || body == nullptr || !name->is_string() || !body->is_string()) continue;
      if (name->get_string() == "default") fallback = body->get_string();
      if (has_tools && name->get_string() == "tool_use") text = body->get_string();
    }
    if (text.empty()) text = fallback;
    if (text.empty())
      return make_error(ErrorCode::kNotFound, "tokenizer_config has no default chat_template");
  } else {
    return invalid("tokenizer_config: chat_template must be a string or a list of named templates");
  }
  auto tmpl = Template::parse(text);
  if (!tmpl.ok()) return std::move(tmpl).error();
  return render_chat(*tmpl, request, tokenizer_config, options);
}

}  // namespace omni::chat
