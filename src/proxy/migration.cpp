// Mid-stream migration's pure half (omni/proxy/migration.hpp): which requests may continue
// elsewhere, the continuation's body, and the splice of the continuation's events.
#include "omni/proxy/migration.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>

namespace omni::proxy {
namespace {

namespace json = boost::json;

std::optional<json::value> parse(std::string_view text) {
  boost::system::error_code ec;
  json::value value = json::parse(text, ec);
  if (ec) return std::nullopt;
  return value;
}

bool is_null_or_false(std::string_view raw) { return raw == "null" || raw == "false"; }

std::optional<std::int64_t> integer(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64()) return static_cast<std::int64_t>(v.as_uint64());
  return std::nullopt;
}

std::optional<std::int64_t> integer(std::string_view raw) {
  auto v = parse(raw);
  return v ? integer(*v) : std::nullopt;
}

// Whether a completions prompt is a batch (several prompts): one continuation cannot stand for
// several answers.
bool is_batch(const json::value& prompt) {
  if (!prompt.is_array()) return false;
  const json::array& items = prompt.as_array();
  if (items.empty() || items.front().is_number()) return false;  // token ids of one prompt
  return items.size() > 1;
}

std::string blocker_of(std::string_view key, std::string_view raw, Api api) {
  if (key == "n" || key == "best_of") {
    auto n = integer(raw);
    return n && *n > 1 ? std::string(key) + " > 1" : "";
  }
  if (key == "logprobs" || key == "prompt_logprobs") {
    return is_null_or_false(raw) ? "" : std::string(key);
  }
  if (key == "top_logprobs") {
    auto n = integer(raw);
    return n && *n > 0 ? "top_logprobs" : "";
  }
  if (key == "echo" || key == "continue_final_message")
    return raw == "true" ? std::string(key) : "";
  if (key == "suffix") return raw == "null" || raw == "\"\"" ? "" : "suffix";
  if (key == "response_format") {
    auto v = parse(raw);
    if (!v || v->is_null()) return "";
    const json::object* o = v->if_object();
    const json::value* type = o ? o->if_contains("type") : nullptr;
    return type && type->is_string() && type->as_string() == "text" ? "" : "response_format";
  }
  static constexpr std::array<std::string_view, 6> kGuided = {
      "guided_json",    "guided_regex",       "guided_choice",
      "guided_grammar", "structured_outputs", "guided_whitespace_pattern"};
  if (std::find(kGuided.begin(), kGuided.end(), key) != kGuided.end()) {
    return raw == "null" ? "" : std::string(key);
  }
  if (key == "tools") return raw == "null" || raw == "[]" ? "" : "tools";
  if (key == "prompt" && api == Api::kCompletions) {
    auto v = parse(raw);
    return v && is_batch(*v) ? "a batch of prompts" : "";
  }
  return "";
}

// The prompt extended by what was sent: text + text, or ids + ids.
Result<std::string> extended_prompt(std::string_view raw, const SentSoFar& sent) {
  auto v = parse(raw);
  if (!v) return make_error(ErrorCode::kInvalidArgument, "the prompt is not JSON");
  json::value prompt = std::move(*v);
  if (prompt.is_array() && prompt.as_array().size() == 1 && !prompt.as_array()[0].is_number()) {
    json::value only = prompt.as_array()[0];  // a batch of one
    prompt = std::move(only);
  }
  if (prompt.is_string()) {
    std::string text(prompt.as_string());
    return json_quote(text + sent.text);
  }
  if (prompt.is_array()) {
    if (!sent.ids) {
      return make_error(ErrorCode::kInvalidArgument,
                        "a token-id prompt continues only with the sent text's ids (--tokenizer)");
    }
    json::array ids = prompt.as_array();
    for (std::uint32_t id : *sent.ids) ids.emplace_back(id);
    return json::serialize(ids);
  }
  return make_error(ErrorCode::kInvalidArgument, "the prompt is neither text nor token ids");
}

Result<std::string> extended_messages(std::string_view raw, std::string_view text) {
  auto v = parse(raw);
  if (!v || !v->is_array()) return make_error(ErrorCode::kInvalidArgument, "messages is no list");
  json::array messages = std::move(v->as_array());
  messages.push_back(json::object{{"role", "assistant"}, {"content", text}});
  return json::serialize(messages);
}

// `raw` less `sent` tokens, at least `floor`; nullopt when `raw` is no integer (null: unbounded).
std::optional<std::string> reduced(std::string_view raw, std::uint64_t sent, std::int64_t floor) {
  auto n = integer(raw);
  if (!n) return std::nullopt;
  return std::to_string(std::max(floor, *n - static_cast<std::int64_t>(sent)));
}

// The data of an SSE event (its data lines joined); nullopt when it has none.
std::optional<std::string> data_of(std::string_view event) {
  std::optional<std::string> data;
  while (!event.empty()) {
    const std::size_t end = event.find('\n');
    std::string_view line = event.substr(0, end);
    event = end == std::string_view::npos ? std::string_view() : event.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 5) != "data:") continue;
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (data) {
      *data += '\n';
      *data += line;
    } else {
      data = std::string(line);
    }
  }
  return data;
}

// The end of the first event in `bytes` (the index after its blank line), or npos.
std::pair<std::size_t, std::size_t> event_end(std::string_view bytes) {
  const std::size_t lf = bytes.find("\n\n");
  const std::size_t crlf = bytes.find("\r\n\r\n");
  if (lf == std::string_view::npos && crlf == std::string_view::npos) {
    return {std::string_view::npos, 0};
  }
  if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf < lf)) {
    return {crlf, 4};
  }
  return {lf, 2};
}

const json::object* first_choice(const json::object& chunk) {
  const json::value* choices = chunk.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) return nullptr;
  return choices->as_array()[0].if_object();
}

json::object* first_choice(json::object& chunk) {
  json::value* choices = chunk.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) return nullptr;
  return choices->as_array()[0].if_object();
}

std::string_view choice_text(const json::object& choice) {
  if (const json::value* t = choice.if_contains("text"); t && t->is_string()) return t->as_string();
  const json::value* delta = choice.if_contains("delta");
  if (!delta || !delta->is_object()) return {};
  const json::value* content = delta->as_object().if_contains("content");
  return content && content->is_string() ? std::string_view(content->as_string())
                                         : std::string_view();
}

// A chat stream's opening chunk (the role, no content): the continuation's is dropped.
bool role_only(const json::object& chunk) {
  const json::object* choice = first_choice(chunk);
  if (!choice) return false;
  const json::value* delta = choice->if_contains("delta");
  if (!delta || !delta->is_object() || !delta->as_object().contains("role")) return false;
  const json::value* finish = choice->if_contains("finish_reason");
  if (finish && !finish->is_null()) return false;
  if (delta->as_object().contains("tool_calls")) return false;
  return choice_text(*choice).empty();
}

}  // namespace

std::string_view migration_cause_name(MigrationCause cause) noexcept {
  static constexpr std::array<std::string_view, kMigrationCauseCount> kNames = {
      "connection", "idle", "engine_error", "drain"};
  return kNames[static_cast<std::size_t>(cause)];
}

bool prompt_is_token_ids(std::span<const JsonMember> members) {
  for (const JsonMember& m : members) {
    if (m.key != "prompt") continue;
    auto v = parse(m.value);
    if (!v || !v->is_array()) return false;
    const json::array& items = v->as_array();
    if (items.size() == 1 && items[0].is_array()) return true;  // a batch of one
    return !items.empty() && items[0].is_number();
  }
  return false;
}

std::optional<std::vector<std::uint32_t>> StreamSplice::token_ids() const {
  if (!track_ids_ || ids_missing_ || over_limit_) return std::nullopt;
  return ids_;
}

std::string migration_blocker(std::span<const JsonMember> members, Api api) {
  for (const JsonMember& m : members) {
    std::string blocker = blocker_of(m.key, m.value, api);
    if (!blocker.empty()) return blocker;
  }
  return "";
}

Result<std::string> continuation_body(std::span<const JsonMember> members, Api api,
                                      const SentSoFar& sent) {
  std::vector<JsonEdit> edits;
  for (const JsonMember& m : members) {
    if (api == Api::kCompletions && m.key == "prompt") {
      auto prompt = extended_prompt(m.value, sent);
      if (!prompt) return std::move(prompt).error();
      edits.push_back({"prompt", std::move(*prompt)});
    } else if (api == Api::kChatCompletions && m.key == "messages") {
      auto messages = extended_messages(m.value, sent.text);
      if (!messages) return std::move(messages).error();
      edits.push_back({"messages", std::move(*messages)});
    } else if (m.key == "max_tokens" || m.key == "max_completion_tokens") {
      if (auto left = reduced(m.value, sent.tokens, 1)) edits.push_back({m.key, std::move(*left)});
    } else if (m.key == "min_tokens") {
      if (auto left = reduced(m.value, sent.tokens, 0)) edits.push_back({m.key, std::move(*left)});
    }
  }
  if (api == Api::kChatCompletions) {
    edits.push_back({"continue_final_message", "true"});
    edits.push_back({"add_generation_prompt", "false"});
  }
  return edit_members(members, edits);
}

StreamSplice::Fed StreamSplice::feed(std::string_view piece) {
  Fed fed;
  if (error_seen_) return fed;
  if (over_limit_ && continuations_ == 0) {  // no continuation possible: nothing to follow
    fed.out = piece;
    return fed;
  }
  pending_ += piece;
  std::size_t start = 0;
  for (;;) {
    const auto [end, blank] = event_end(std::string_view(pending_).substr(start));
    if (end == std::string_view::npos) break;
    const std::string_view event = std::string_view(pending_).substr(start, end);
    start += end + blank;
    if (!this->event(event, fed.out)) {
      fed.engine_error = true;
      pending_.clear();
      return fed;
    }
    if (over_limit_ && continuations_ == 0) {  // from here on the bytes pass as they come
      fed.out.append(pending_, start);
      pending_.clear();
      return fed;
    }
  }
  pending_.erase(0, start);
  return fed;
}

bool StreamSplice::event(std::string_view event, std::string& out) {
  const std::optional<std::string> data = data_of(event);
  auto pass = [&] {
    out += event;
    out += "\n\n";
  };
  if (!data) {
    pass();  // a comment or another field: not ours to change
    return true;
  }
  if (*data == "[DONE]") {
    done_seen_ = true;
    out += "data: [DONE]\n\n";
    return true;
  }
  // Events are small: parsed into a buffer on the stack, so following a stream costs no heap
  // allocation per event (and no allocator churn across thousands of concurrent streams).
  unsigned char scratch[4096];
  json::monotonic_resource arena(scratch, sizeof scratch);
  boost::system::error_code ec;
  json::value value = json::parse(*data, ec, &arena);
  const std::optional<json::value*> parsed =
      ec ? std::nullopt : std::optional<json::value*>(&value);
  if (!parsed || !(*parsed)->is_object()) {
    pass();  // not a chunk: relayed as it came (the chat bridge judges it)
    return true;
  }
  json::object& chunk = (*parsed)->as_object();
  if (chunk.contains("error") && !chunk.contains("choices")) {
    error_seen_ = true;
    const json::value& error = chunk["error"];
    const json::value* message =
        error.is_object() ? error.as_object().if_contains("message") : nullptr;
    engine_error_ = message && message->is_string() ? std::string(message->as_string())
                                                    : json::serialize(error);
    return false;
  }
  if (id_.empty() && continuations_ == 0) {
    if (const json::value* id = chunk.if_contains("id"); id && id->is_string()) {
      id_ = std::string(id->as_string());
    }
  }
  bool hidden = false;
  if (json::object* choice = first_choice(chunk)) {
    const std::string_view text = choice_text(*choice);
    if (!text.empty()) {
      ++events_;
      if (!over_limit_ && text_.size() + text.size() > max_text_bytes_) {
        over_limit_ = true;
        std::string().swap(text_);
        std::vector<std::uint32_t>().swap(ids_);
      }
      if (!over_limit_) text_ += text;
    }
    if (track_ids_) hidden = take_token_ids(*choice, !text.empty());
    const json::value* finish = choice->if_contains("finish_reason");
    if (finish && !finish->is_null()) finished_ = true;
  }
  const json::value* usage = chunk.if_contains("usage");
  const json::object* counts = usage ? usage->if_object() : nullptr;
  if (counts) {
    if (const json::value* c = counts->if_contains("completion_tokens")) {
      if (auto n = integer(*c)) usage_tokens_ = tokens_before_ + static_cast<std::uint64_t>(*n);
    }
  }
  if (continuations_ == 0 && !hidden) {
    pass();
    return true;
  }
  // A continuation's event, as part of the first stream (or a first event with ids hidden).
  if (continuations_ > 0 && role_only(chunk)) return true;
  if (continuations_ > 0 && !id_.empty() && chunk.contains("id")) chunk["id"] = id_;
  if (continuations_ > 0 && counts) {
    json::object whole = *counts;
    const std::int64_t continued_prompt =
        whole.contains("prompt_tokens") ? integer(whole["prompt_tokens"]).value_or(0) : 0;
    const auto before = static_cast<std::int64_t>(tokens_before_);
    const std::int64_t prompt = prompt_tokens_
                                    ? static_cast<std::int64_t>(*prompt_tokens_)
                                    : std::max<std::int64_t>(0, continued_prompt - before);
    const std::int64_t completion =
        before +
        (whole.contains("completion_tokens") ? integer(whole["completion_tokens"]).value_or(0) : 0);
    whole["prompt_tokens"] = prompt;
    whole["completion_tokens"] = completion;
    whole["total_tokens"] = prompt + completion;
    chunk["usage"] = std::move(whole);
  }
  out += "data: ";
  out += json::serialize(chunk);
  out += "\n\n";
  return true;
}

// The event's generated ids (choices[0].token_ids) appended to ids_; with `hide`, the ids
// the client did not ask for are nulled. True when the event was changed.
bool StreamSplice::take_token_ids(json::object& choice, bool has_text) {
  json::value* ids = choice.if_contains("token_ids");
  if (ids && ids->is_array()) {
    for (const json::value& id : ids->as_array()) {
      if (!id.is_int64() || id.as_int64() < 0 || id.as_int64() > UINT32_MAX) {
        ids_missing_ = true;
        break;
      }
      if (!over_limit_) ids_.push_back(static_cast<std::uint32_t>(id.as_int64()));
    }
  } else if (has_text) {
    ids_missing_ = true;  // the engine did not send them: no exact continuation
  }
  if (!hide_ids_) return false;
  bool changed = false;
  for (const char* key : {"token_ids", "prompt_token_ids"}) {
    json::value* v = choice.if_contains(key);
    if (v && !v->is_null()) {
      *v = nullptr;
      changed = true;
    }
  }
  return changed;
}

void StreamSplice::continue_elsewhere(std::uint64_t tokens_sent,
                                      std::optional<std::uint64_t> prompt_tokens) {
  ++continuations_;
  tokens_before_ = tokens_sent;
  if (usage_tokens_) usage_tokens_ = tokens_sent;
  events_ = tokens_sent;
  if (!prompt_tokens_) prompt_tokens_ = prompt_tokens;
  pending_.clear();
  finished_ = false;
  done_seen_ = false;
  error_seen_ = false;
  engine_error_.clear();
}

}  // namespace omni::proxy
