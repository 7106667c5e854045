#include "chat_bridge.hpp"

#include <array>

#include "call.hpp"

namespace omni::proxy {
namespace {

// chat_convert's NotConvertible reasons (docs/chat-convert.md), plus "invalid_body" for a body
// chat_to_completion refuses outright; anything else is counted as "other".
constexpr std::array<std::string_view, 18> kReasons = {"tools",
                                                       "tool_choice",
                                                       "response_format",
                                                       "logprobs",
                                                       "n",
                                                       "echo",
                                                       "return_token_ids",
                                                       "continue_final_message",
                                                       "chat_template",
                                                       "reasoning_effort",
                                                       "messages",
                                                       "max_tokens",
                                                       "field_type",
                                                       "duplicate_key",
                                                       "template_error",
                                                       "tokenizer_error",
                                                       "no_template",
                                                       "invalid_body"};

// An engine event bigger than this without a blank line is not an SSE stream we understand;
// the bound keeps a broken engine from making the proxy buffer without end.
constexpr std::size_t kMaxPendingEvent = 4 * 1024 * 1024;

// The data of one SSE event: its "data:" lines joined by newlines (comments and other fields
// are dropped, as a client would). nullopt: the event has no data line.
std::optional<std::string> event_data(std::string_view event) {
  std::optional<std::string> data;
  while (!event.empty()) {
    const std::size_t eol = event.find('\n');
    std::string_view line = event.substr(0, eol);
    event = eol == std::string_view::npos ? std::string_view{} : event.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with("data:")) continue;
    line.remove_prefix(5);
    if (line.starts_with(' ')) line.remove_prefix(1);
    if (data) {
      *data += '\n';
      *data += line;
    } else {
      data.emplace(line);
    }
  }
  return data;
}

// Where the first complete event of `text` ends (after its blank line), or npos.
std::size_t event_end(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') continue;
    std::size_t next = i + 1;
    if (next < text.size() && text[next] == '\r') ++next;
    if (next < text.size() && text[next] == '\n') return next + 1;
  }
  return std::string_view::npos;
}

void append_event(std::string& out, std::string_view payload) {
  out += "data: ";
  out += payload;
  out += "\n\n";
}

}  // namespace

// ---- ChatToCompletions ---------------------------------------------------------------------

Result<std::unique_ptr<ChatToCompletions>> ChatToCompletions::create(
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer, metrics::Counter* converted,
    metrics::CounterFamily* not_converted) {
  auto tmpl = load_chat_template(*tokenizer);
  if (!tmpl)
    return make_error(ErrorCode::kInvalidArgument, "chat_to_completions: " + tmpl.error().message);
  std::unique_ptr<ChatToCompletions> out(new ChatToCompletions());
  out->tokenizer_ = std::move(tokenizer);
  out->template_ = std::move(*tmpl);
  out->converted_ = converted;
  for (std::string_view reason : kReasons) {
    auto child = not_converted->with({reason});
    if (!child) return std::move(child).error();
    out->not_converted_.emplace_back(std::string(reason), *child);
  }
  auto other = not_converted->with({"other"});
  if (!other) return std::move(other).error();
  out->not_converted_.emplace_back("other", *other);
  return out;
}

Result<ChatAsCompletion> ChatToCompletions::convert(std::string_view chat_body) const {
  return chat_to_completion(chat_body, *tokenizer_, template_);
}

void ChatToCompletions::count_converted() const { converted_->inc(); }

void ChatToCompletions::count_not_converted(std::string_view reason) const {
  for (const auto& [name, counter] : not_converted_) {
    if (name == reason) {
      counter->inc();
      return;
    }
  }
  not_converted_.back().second->inc();
}

// ---- ChatBridge ------------------------------------------------------------------------------

bool ChatBridge::begin(Call& call) {
  const ChatToCompletions* chat = call.g.chat.get();
  if (!chat || call.api != Api::kChatCompletions) return false;
  auto converted = chat->convert(call.request.body);
  if (!converted) {
    chat->count_not_converted("invalid_body");
    return false;
  }
  if (const auto* refused = std::get_if<NotConvertible>(&*converted)) {
    chat->count_not_converted(refused->reason);
    return false;
  }
  chat->count_converted();
  conversion_ = std::move(std::get<ChatConversion>(*converted));
  call.request.body = std::move(conversion_->completion_body);
  conversion_->completion_body.clear();
  // The prompt is now token ids: the prompt step hashes them as for any completions request,
  // so a converted chat request gets exact block hashes where a chat body gets a count only.
  call.prompt = call.g.prompts->read_valid(call.request.body, Api::kCompletions);
  call.info.prompt_tokens = conversion_->prompt_tokens;
  if (conversion_->stream) stream_.emplace(*conversion_);
  call.entry.chat = this;
  return true;
}

bool ChatBridge::stream_event(std::string_view event, std::string& out, std::string& error) {
  auto data = event_data(event);
  if (!data) return true;  // a comment or a keep-alive: nothing for the client
  auto payloads = stream_->convert(*data);
  if (!payloads) {
    error = "the engine's stream is not a completions stream: " + payloads.error().message;
    return false;
  }
  for (const std::string& payload : *payloads) append_event(out, payload);
  return true;
}

bool ChatBridge::stream_piece(std::string& piece, std::string& error) {
  if (!stream_) return true;  // begin() saw a non-streaming request: nothing to convert here
  pending_ += piece;
  piece.clear();
  std::string_view rest = pending_;
  bool ok = true;
  for (std::size_t end = event_end(rest); ok && end != std::string_view::npos;
       end = event_end(rest)) {
    ok = stream_event(rest.substr(0, end), piece, error);
    rest.remove_prefix(end);
  }
  if (ok && rest.size() > kMaxPendingEvent) {
    error = "the engine sent an SSE event over " + std::to_string(kMaxPendingEvent) + " bytes";
    ok = false;
  }
  pending_.erase(0, pending_.size() - rest.size());
  if (ok) return true;
  append_event(piece, stream_error_payload(error));
  append_event(piece, "[DONE]");
  pending_.clear();
  return false;
}

Result<std::string> ChatBridge::whole_body(std::string_view completion_body) const {
  return completion_to_chat_response(completion_body);
}

// ---- hooks -----------------------------------------------------------------------------------

std::string engine_target(const Call& call) {
  if (call.entry.chat) return "/v1/completions";
  return std::string(call.request.target);
}

Api engine_api(const Call& call) { return call.entry.chat ? Api::kCompletions : call.api; }

bool chat_whole_body(const Call& call, std::string& body, std::string& error) {
  if (!call.entry.chat) return true;
  auto chat = call.entry.chat->whole_body(body);
  if (!chat) {
    error = "the engine's answer is not a completions response: " + chat.error().message;
    return false;
  }
  body = std::move(*chat);
  return true;
}

bool chat_stream_piece(Call& call, std::string& piece, std::string& error) {
  if (!call.entry.chat) return true;
  return call.entry.chat->stream_piece(piece, error);
}

}  // namespace omni::proxy
