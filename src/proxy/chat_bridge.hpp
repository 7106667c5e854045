// The request path's side of the chat → completions conversion (chat_convert.hpp,
// docs/chat-convert.md): with --chat-to-completions, a chat request the conversion keeps exact
// goes to the engines as a /v1/completions request whose prompt is the proxy's token ids, and
// the engine's completions answer is turned back into the chat answer on its way to the client.
//
//   handle_generate ── ChatBridge::begin ──▶ call.request.body = completions body, exact prompt
//        │                                   (ids → token count and block hashes), or unchanged
//   every leg: upstream_request ── engine_target ──▶ /v1/completions or the client's route
//   decode leg: 200 body ── chat_whole_body ──▶ chat.completion body (502 if malformed)
//               SSE piece ── chat_stream_piece ──▶ chat.completion.chunk events
//
// The per-request ChatBridge lives in handle_generate's frame; the legs find it through
// call.entry.chat (null: the request is not converted and everything is relayed as it is).
//
// Threading: ChatToCompletions is immutable after create() and shared by every I/O thread; a
// ChatBridge belongs to one request's coroutine.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/proxy/chat_convert.hpp"
#include "omni/proxy/rewrite.hpp"

namespace omni::proxy {

struct Call;

// Gateway-wide: the tokenizer, the model's chat template and the conversion's counters.
class ChatToCompletions {
 public:
  // The chat template of `tokenizer` (its tokenizer_config.json). An error (no template, a
  // template that does not parse) stops the proxy at start: the switch would do nothing.
  static Result<std::unique_ptr<ChatToCompletions>> create(
      std::shared_ptr<const tokenizer::Tokenizer> tokenizer, metrics::Counter* converted,
      metrics::CounterFamily* not_converted);

  Result<ChatAsCompletion> convert(std::string_view chat_body) const;
  void count_converted() const;
  void count_not_converted(std::string_view reason) const;

 private:
  ChatToCompletions() = default;

  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  ChatPromptTemplate template_;
  metrics::Counter* converted_ = nullptr;
  // One child per known reason, resolved at start so the request path only touches atomics;
  // the last one is "other" (a reason added to chat_convert without updating the list).
  std::vector<std::pair<std::string, metrics::Counter*>> not_converted_;
};

// One chat request's conversion state.
class ChatBridge {
 public:
  // Right after inspect_request. Converts a chat request when the switch is on and the request
  // allows it: the call's body becomes the completions body, call.info.prompt_tokens the exact
  // count and call.prompt the ids' block hashes; returns true. False: nothing changed, the
  // caller reads the prompt as usual and the request goes out as chat.
  bool begin(Call& call);

  // The engine's SSE bytes (any piece boundaries) → the bytes for the client, in place; only
  // whole events are emitted, a partial one waits for the next piece. False: the engine sent
  // something that is not a completions event; `piece` then ends with vLLM's in-stream error
  // event and [DONE], and the caller stops reading the engine.
  bool stream_piece(std::string& piece, std::string& error);

  // A non-streaming 200 completions body → the chat.completion body.
  Result<std::string> whole_body(std::string_view completion_body) const;

 private:
  bool stream_event(std::string_view event, std::string& out, std::string& error);

  std::optional<ChatConversion> conversion_;
  std::optional<ChatStreamConverter> stream_;
  std::string pending_;  // the engine's bytes after the last complete event
};

// The engine route for every leg of `call`: /v1/completions when converted, else the client's.
std::string engine_target(const Call& call);
// The API the engines see: completions when converted, else the client's.
Api engine_api(const Call& call);

// Hooks for the decode leg; no-ops for a call that is not converted.
// In place on a 200 non-streaming body; false when the body is not a completions answer
// (`error` says why; the caller answers 502).
bool chat_whole_body(const Call& call, std::string& body, std::string& error);
// See ChatBridge::stream_piece; true and `piece` untouched when not converted.
bool chat_stream_piece(Call& call, std::string& piece, std::string& error);

}  // namespace omni::proxy
