#include "sim/request.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cmath>
#include <limits>

namespace omni::sim {
namespace json = boost::json;
namespace {

// vLLM's SamplingParams refuses max_tokens above this even before the context check.
constexpr std::int64_t kMaxIntParam = std::numeric_limits<std::int32_t>::max();

const json::value* field(const json::object& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

// A step of parsing: fills `out` or sets `error`.
struct Parser {
  const json::object& obj;
  std::optional<ApiError> error;

  bool fail(ApiError e) {
    if (!error) error = std::move(e);
    return false;
  }
  bool wrong_type(std::string_view key, std::string_view what) {
    return fail(validation_error("Input should be a valid " + std::string(what), std::string(key)));
  }

  bool get_bool(std::string_view key, bool& out) {
    const json::value* v = field(obj, key);
    if (!v) return true;
    if (!v->is_bool()) return wrong_type(key, "boolean");
    out = v->get_bool();
    return true;
  }
  bool get_int(std::string_view key, std::optional<std::int64_t>& out) {
    const json::value* v = field(obj, key);
    if (!v) return true;
    if (v->is_int64()) {
      out = v->get_int64();
    } else if (v->is_uint64()) {
      out = std::numeric_limits<std::int64_t>::max();  // beyond int64: "too large" below
    } else if (v->is_double() && std::abs(v->get_double()) >= 9.2e18) {
      // An integer literal beyond 64 bits parses as a double; keep its sign, clamp its size.
      out = v->get_double() > 0 ? std::numeric_limits<std::int64_t>::max()
                                : std::numeric_limits<std::int64_t>::min();
    } else if (v->is_double() && v->get_double() == std::trunc(v->get_double())) {
      out = static_cast<std::int64_t>(v->get_double());  // 16.0 is accepted as 16, as pydantic
    } else {
      return wrong_type(key, "integer");
    }
    return true;
  }
  // Pydantic's lax integer: a number, or a string of decimal digits with an optional sign and
  // surrounding spaces ("8998" -> 8998), as SGLang's request model accepts bootstrap fields.
  bool get_lax_int(std::string_view key, std::optional<std::int64_t>& out) {
    const json::value* v = field(obj, key);
    if (!v || !v->is_string()) return get_int(key, out);
    std::string_view text = v->get_string();
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    bool negative = false;
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
      negative = text.front() == '-';
      text.remove_prefix(1);
    }
    std::int64_t value = 0;
    bool digits = !text.empty();
    for (char c : text) {
      if (c < '0' || c > '9' || value > (std::numeric_limits<std::int64_t>::max() - 9) / 10) {
        digits = false;
        break;
      }
      value = value * 10 + (c - '0');
    }
    if (!digits) {
      return fail(
          validation_error("Input should be a valid integer, unable to parse string as an integer",
                           std::string(key)));
    }
    out = negative ? -value : value;
    return true;
  }
  bool get_number(std::string_view key) {
    const json::value* v = field(obj, key);
    if (v && !v->is_number()) return wrong_type(key, "number");
    return true;
  }
  bool get_string(std::string_view key, std::optional<std::string>& out) {
    const json::value* v = field(obj, key);
    if (!v) return true;
    if (!v->is_string()) return wrong_type(key, "string");
    out = std::string(v->get_string());
    return true;
  }
};

bool parse_prompt(Parser& p, const TextCodec& codec, std::vector<std::uint32_t>& tokens) {
  auto it = p.obj.find("prompt");
  if (it == p.obj.end() || it->value().is_null()) {
    return p.fail(validation_error("Field required", "prompt"));
  }
  const json::value& prompt = it->value();
  if (prompt.is_string()) {
    tokens = codec.encode(prompt.get_string());
    return true;
  }
  if (!prompt.is_array()) return p.wrong_type("prompt", "string or list");
  const json::array& items = prompt.get_array();
  if (items.size() == 1 && (items[0].is_string() || items[0].is_array())) {
    // A batch of one: the only form of a prompt list omni-sim serves.
    if (items[0].is_string()) {
      tokens = codec.encode(items[0].get_string());
      return true;
    }
    json::object single;
    single["prompt"] = items[0];
    Parser inner{single, std::nullopt};
    bool ok = parse_prompt(inner, codec, tokens);
    if (!ok) p.error = inner.error;
    return ok;
  }
  for (const json::value& item : items) {
    if (item.is_string() || item.is_array()) {
      return p.fail(
          not_implemented("omni-sim serves one prompt per request; send the prompts "
                          "of a batch as separate requests"));
    }
    if (!item.is_int64() || item.get_int64() < 0 ||
        item.get_int64() > std::numeric_limits<std::uint32_t>::max()) {
      return p.fail(validation_error("Input should be a valid token id", "prompt"));
    }
    tokens.push_back(static_cast<std::uint32_t>(item.get_int64()));
  }
  return true;
}

// transformers' continue_final_message: cut the rendered text right after the final message's
// content, so the model continues it instead of starting a new turn.
std::optional<std::string> cut_after_final_message(std::string rendered,
                                                   const json::array& messages) {
  if (messages.empty() || !messages.back().is_object()) return std::nullopt;
  const json::object& last = messages.back().get_object();
  auto content = last.find("content");
  std::string final_text;
  if (content != last.end() && content->value().is_string()) {
    final_text = content->value().get_string();
  } else if (content != last.end() && content->value().is_array()) {
    const json::array& parts = content->value().get_array();
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      const json::object* part = it->if_object();
      auto text = part ? part->find("text") : json::object::const_iterator{};
      if (part && text != part->end() && text->value().is_string()) {
        final_text = text->value().get_string();
        break;
      }
    }
  }
  const auto space = [](char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
  };
  std::string_view stripped = final_text;
  while (!stripped.empty() && space(stripped.front())) stripped.remove_prefix(1);
  std::string_view lstripped = stripped;
  while (!stripped.empty() && space(stripped.back())) stripped.remove_suffix(1);
  const std::size_t at = rendered.rfind(stripped);
  if (at == std::string::npos) return std::nullopt;
  // Keep the message's trailing spaces when the template kept them, as transformers does.
  const bool kept = std::string_view(rendered).substr(at, lstripped.size()) == final_text;
  rendered.resize(at + (kept ? lstripped.size() : stripped.size()));
  return rendered;
}

bool validate_messages(Parser& p, const json::value* v) {
  if (!v) return p.fail(validation_error("Field required", "messages"));
  if (!v->is_array()) return p.wrong_type("messages", "list");
  for (const json::value& m : v->get_array()) {
    const json::object* msg = m.if_object();
    if (!msg || !msg->contains("role") || !(*msg).at("role").is_string()) {
      return p.fail(validation_error("Each message needs a string 'role'", "messages"));
    }
    auto content = msg->find("content");
    if (content != msg->end() && !content->value().is_null() && !content->value().is_string() &&
        !content->value().is_array()) {
      return p.wrong_type("messages", "string or list of content parts");
    }
  }
  return true;
}

bool chat_tokens(Parser& p, const TextCodec& codec, std::vector<std::uint32_t>& tokens) {
  const json::value* messages = field(p.obj, "messages");
  if (!validate_messages(p, messages)) return false;
  bool generation_prompt = true, continue_final = false, special = false;
  std::optional<std::string> chat_template;
  if (!p.get_bool("add_generation_prompt", generation_prompt) ||
      !p.get_bool("continue_final_message", continue_final) ||
      !p.get_bool("add_special_tokens", special) || !p.get_string("chat_template", chat_template)) {
    return false;
  }
  const bool explicit_generation_prompt = field(p.obj, "add_generation_prompt") != nullptr;
  if (continue_final && generation_prompt) {
    // vLLM's validator when both are set; transformers' refusal when the default is left on.
    return explicit_generation_prompt
               ? p.fail(validation_error("Cannot set both `continue_final_message` and "
                                         "`add_generation_prompt` to True."))
               : p.fail(
                     bad_request("continue_final_message and add_generation_prompt are not "
                                 "compatible. Use continue_final_message when you want the model "
                                 "to continue the final message, and add_generation_prompt when "
                                 "you want to add a header that will prompt it to start a new "
                                 "assistant message instead."));
  }
  ChatRenderOptions options;
  options.add_generation_prompt = generation_prompt;
  if (chat_template) options.chat_template = *chat_template;
  Result<std::string> rendered = codec.render_chat(p.obj, options);
  if (!rendered) return p.fail(bad_request(rendered.error().message));
  std::string text = std::move(*rendered);
  if (continue_final) {
    auto cut = cut_after_final_message(std::move(text), messages->get_array());
    if (!cut) {
      return p.fail(
          bad_request("continue_final_message is set but the final message does not appear "
                      "in the chat after applying the chat template! This can happen if "
                      "the chat template deletes portions of the final message. Please "
                      "verify the chat template and final message in your chat to ensure "
                      "they are compatible."));
    }
    text = std::move(*cut);
  }
  tokens = special ? codec.encode_with_special_tokens(text) : codec.encode(text);
  return true;
}

bool parse_messages(Parser& p, const TextCodec& codec, std::vector<std::uint32_t>& tokens) {
  return chat_tokens(p, codec, tokens);
}

bool parse_stream_options(Parser& p, GenerationRequest& r) {
  const json::value* v = field(p.obj, "stream_options");
  if (!v) return true;
  if (!v->is_object()) return p.wrong_type("stream_options", "dictionary");
  if (!r.stream) {
    return p.fail(validation_error("Stream options can only be defined when `stream=True`.",
                                   "stream_options"));
  }
  Parser inner{v->get_object(), std::nullopt};
  bool ok = inner.get_bool("include_usage", r.include_usage) &&
            inner.get_bool("continuous_usage_stats", r.continuous_usage_stats);
  if (!ok) return p.fail(*inner.error);
  return true;
}

bool parse_pd_fields(Parser& p, GenerationRequest& r) {
  if (const json::value* v = field(p.obj, "kv_transfer_params")) {
    if (!v->is_object()) return p.wrong_type("kv_transfer_params", "dictionary");
    r.kv_transfer_params = v->get_object();
  }
  std::optional<std::string> host;
  std::optional<std::int64_t> port, room;
  if (!p.get_string("bootstrap_host", host) || !p.get_lax_int("bootstrap_port", port) ||
      !p.get_lax_int("bootstrap_room", room)) {
    return false;
  }
  if (host && room) {
    if (*room < 0) return p.fail(validation_error("bootstrap_room must be >= 0", "bootstrap_room"));
    r.bootstrap = Bootstrap{*host, port.value_or(0), static_cast<std::uint64_t>(*room)};
  }
  return true;
}

// The effective output limit, with vLLM's checks and messages.
bool resolve_max_tokens(Parser& p, GenerationRequest& r, const ModelLimits& limits) {
  std::optional<std::int64_t> max_tokens, max_completion_tokens, min_tokens;
  if (!p.get_int("max_tokens", max_tokens)) return false;
  if (r.endpoint == Endpoint::kChat && !p.get_int("max_completion_tokens", max_completion_tokens)) {
    return false;
  }
  if (!p.get_int("min_tokens", min_tokens)) return false;
  std::optional<std::int64_t> requested =
      max_completion_tokens ? max_completion_tokens : max_tokens;
  const std::string param = max_completion_tokens ? "max_completion_tokens" : "max_tokens";
  const auto prompt_len = static_cast<std::int64_t>(r.prompt_tokens.size());
  const std::int64_t model_len = limits.max_model_len;
  if (prompt_len > model_len || (prompt_len == model_len && !requested)) {
    return p.fail(
        bad_request("This model's maximum context length is " + std::to_string(model_len) +
                        " tokens. However, your request has " + std::to_string(prompt_len) +
                        " input tokens. Please reduce the length of the input messages.",
                    "input_tokens"));
  }
  if (requested && *requested < 1) {
    return p.fail(bad_request(
        "max_tokens must be at least 1, got " + std::to_string(*requested) + ".", param));
  }
  if (requested && (*requested > kMaxIntParam || prompt_len + *requested > model_len)) {
    const std::string asked = *requested > kMaxIntParam
                                  ? std::string("more than ") + std::to_string(kMaxIntParam)
                                  : std::to_string(prompt_len + *requested);
    return p.fail(bad_request("This model's maximum context length is " +
                                  std::to_string(model_len) + " tokens. However, you requested " +
                                  asked + " tokens (" + std::to_string(prompt_len) +
                                  " in the messages, " + std::to_string(*requested) +
                                  " in the completion). Please reduce the length of the "
                                  "messages or completion.",
                              param));
  }
  if (min_tokens && *min_tokens < 0) {
    return p.fail(bad_request(
        "min_tokens must be greater than or equal to 0, got " + std::to_string(*min_tokens) + ".",
        "min_tokens"));
  }
  r.requested_max_tokens = requested;
  // Completions default to 16 (vLLM's CompletionRequest) unless max_tokens is an explicit null;
  // chat, and completions with null, to the rest of the context.
  const std::int64_t room = model_len - prompt_len;
  const bool completion_default =
      r.endpoint == Endpoint::kCompletions && !p.obj.contains("max_tokens");
  const std::int64_t fallback = completion_default ? std::min<std::int64_t>(16, room) : room;
  r.max_tokens = static_cast<std::uint32_t>(requested.value_or(fallback));
  if (min_tokens && requested && *min_tokens > *requested) {
    return p.fail(bad_request(
        "min_tokens must be less than or equal to max_tokens=" + std::to_string(*requested) +
            ", got " + std::to_string(*min_tokens) + ".",
        "min_tokens"));
  }
  r.min_tokens =
      static_cast<std::uint32_t>(std::min<std::int64_t>(min_tokens.value_or(0), r.max_tokens));
  r.stop.min_tokens = r.min_tokens;
  return true;
}

bool resolve_model(Parser& p, GenerationRequest& r, const ModelLimits& limits) {
  std::optional<std::string> model;
  if (!p.get_string("model", model)) return false;
  if (!model) {
    r.model = limits.served_names.empty() ? std::string() : limits.served_names.front();
    return true;
  }
  for (const std::string& name : limits.served_names) {
    if (name == *model) {
      r.model = name;
      return true;
    }
  }
  return p.fail(not_found_model(*model));
}

// stop (a string or a list of strings) and stop_token_ids (a list of token ids).
bool parse_stop(Parser& p, StopConditions& stop) {
  if (const json::value* v = field(p.obj, "stop")) {
    if (v->is_string()) {
      stop.stop.emplace_back(v->get_string());
    } else if (v->is_array()) {
      for (const json::value& s : v->get_array()) {
        if (!s.is_string()) return p.wrong_type("stop", "string");
        stop.stop.emplace_back(s.get_string());
      }
    } else {
      return p.wrong_type("stop", "string or list of strings");
    }
  }
  if (const json::value* v = field(p.obj, "stop_token_ids")) {
    if (!v->is_array()) return p.wrong_type("stop_token_ids", "list");
    for (const json::value& id : v->get_array()) {
      if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() > 0xffffffffLL) {
        return p.wrong_type("stop_token_ids", "integer");
      }
      stop.stop_token_ids.push_back(static_cast<std::uint32_t>(id.get_int64()));
    }
  }
  return p.get_bool("ignore_eos", stop.ignore_eos) &&
         p.get_bool("include_stop_str_in_output", stop.include_stop_str_in_output);
}

bool parse_scalars(Parser& p, GenerationRequest& r) {
  std::optional<std::int64_t> n;
  bool ok = p.get_bool("stream", r.stream) && p.get_bool("return_token_ids", r.return_token_ids) &&
            p.get_bool("echo", r.echo) && p.get_int("seed", r.seed) && p.get_int("n", n) &&
            p.get_string("request_id", r.body_request_id) &&
            p.get_string("cache_salt", r.cache_salt);
  for (const char* key : {"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                          "presence_penalty", "frequency_penalty"}) {
    ok = ok && p.get_number(key);
  }
  ok = ok && parse_stop(p, r.stop);
  if (!ok) return false;
  if (n && *n < 1)
    return p.fail(bad_request("n must be at least 1, got " + std::to_string(*n) + ".", "n"));
  if (n && *n > kMaxChoices) {
    return p.fail(bad_request("n must be at most " + std::to_string(kMaxChoices) +
                                  " in omni-sim, got " + std::to_string(*n) + ".",
                              "n"));
  }
  r.n = static_cast<std::uint32_t>(n.value_or(1));
  if (r.cache_salt && r.cache_salt->empty()) {
    return p.fail(validation_error("Parameter 'cache_salt' must be a non-empty string if provided.",
                                   "cache_salt"));
  }
  return true;
}

}  // namespace

std::string render_chat(const json::array& messages, bool add_generation_prompt) {
  std::string out;
  for (const json::value& m : messages) {
    const json::object& msg = m.get_object();
    out += "<|";
    out += msg.at("role").get_string();
    out += "|>\n";
    auto content = msg.find("content");
    if (content != msg.end() && content->value().is_string()) {
      out += content->value().get_string();
    } else if (content != msg.end() && content->value().is_array()) {
      for (const json::value& part : content->value().get_array()) {
        const json::object* po = part.if_object();
        if (!po) continue;
        auto text = po->find("text");
        if (text != po->end() && text->value().is_string()) out += text->value().get_string();
      }
    }
    out += "\n";
  }
  if (add_generation_prompt) out += "<|assistant|>\n";
  return out;
}

std::variant<std::vector<std::uint32_t>, ApiError> chat_prompt_tokens(const json::object& request,
                                                                      const TextCodec& codec) {
  Parser p{request, std::nullopt};
  std::vector<std::uint32_t> tokens;
  if (!chat_tokens(p, codec, tokens)) return *p.error;
  return tokens;
}

ParsedRequest parse_generation_request(std::string_view body, Endpoint endpoint,
                                       const ModelLimits& limits, const TextCodec& codec) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return validation_error("JSON decode error: " + ec.message());
  if (!doc.is_object()) return validation_error("Input should be a valid dictionary");
  GenerationRequest r;
  r.endpoint = endpoint;
  Parser p{doc.get_object(), std::nullopt};
  const bool ok =
      parse_scalars(p, r) && parse_stream_options(p, r) && parse_pd_fields(p, r) &&
      (endpoint == Endpoint::kCompletions ? parse_prompt(p, codec, r.prompt_tokens)
                                          : parse_messages(p, codec, r.prompt_tokens)) &&
      resolve_model(p, r, limits);
  if (!ok) return *p.error;
  if (r.prompt_tokens.empty()) {
    return bad_request("Prompt cannot be empty",
                       endpoint == Endpoint::kChat ? "messages" : "prompt");
  }
  if (!resolve_max_tokens(p, r, limits)) return *p.error;
  return r;
}

}  // namespace omni::sim
