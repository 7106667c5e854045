// Chat → completions conversion (issue 5 §4): the proxy renders a chat request's template
// itself, tokenizes it once, and sends the engine a /v1/completions request whose prompt is the
// token ids; the engine's completions answer is turned back into the chat answer vLLM's chat
// route would have sent, so the client cannot tell the two apart beyond ids and timestamps.
//
//   chat body ──chat_to_completion──▶ ChatConversion{completion_body, prompt_tokens, ...}
//        │                              or NotConvertible{reason}: forward the chat body as is
//        ▼
//   engine /v1/completions
//        │ stream:     each SSE data payload ──ChatStreamConverter::convert──▶ chat payloads
//        │ non-stream: 200 body ──completion_to_chat_response──▶ chat.completion body
//        ▼             (error statuses: the engine's body unchanged; both routes share it)
//   client
//
// Only what the conversion keeps exact is converted: a request with tools, tool_choice,
// response_format, logprobs, n > 1, echo, return_token_ids, its own chat_template, ... is
// NotConvertible (docs/chat-convert.md lists every rule and the field mapping). Members are
// copied byte for byte as in rewrite.hpp: the body is never re-serialised.
//
// Threading: the functions are pure and reentrant; a ChatStreamConverter belongs to one
// request. Every input (client body, engine output) is untrusted: fuzz/proxy_chat_convert.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "omni/chat/template.hpp"
#include "omni/common/result.hpp"
#include "omni/tokenizer/tokenizer.hpp"

namespace omni::proxy {

// The model's chat template, parsed once at start: tokenizer_config.json's chat_template (the
// "default" one of a named list) and the config itself (bos_token & co. for the template).
struct ChatPromptTemplate {
  std::shared_ptr<const chat::Template> tmpl;
  boost::json::object tokenizer_config;
};

// From a loaded tokenizer's config. kNotFound when it has no chat template (leave conversion
// off), kInvalidArgument when the template does not parse (the message names the line).
Result<ChatPromptTemplate> load_chat_template(const tokenizer::Tokenizer& tokenizer);

// A chat request as a completions request.
struct ChatConversion {
  std::string completion_body;  // for POST /v1/completions
  std::uint32_t prompt_tokens = 0;
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  bool continuous_usage_stats = false;  // with include_usage: usage on every chunk
};

// Why a request stays a chat request. `reason` is a stable short name for a metric label
// ("tools", "logprobs", "template_error", ...).
struct NotConvertible {
  std::string reason;
  std::string detail;  // for the debug log, e.g. the template error
};

using ChatAsCompletion = std::variant<ChatConversion, NotConvertible>;

// kInvalidArgument only when `chat_body` is not one JSON object (the proxy validated it before,
// so this is a bug or a bypass); every request the conversion cannot keep exact is a
// NotConvertible value instead, to be forwarded unchanged.
Result<ChatAsCompletion> chat_to_completion(std::string_view chat_body,
                                            const tokenizer::Tokenizer& tokenizer,
                                            const ChatPromptTemplate& prompt_template);

// Turns the engine's completions SSE payloads (the text after "data: ") into the chat
// payloads vLLM's chat route sends: a role chunk before the first content chunk, content
// deltas, the finish chunk, the usage chunk, `[DONE]`; error events pass through unchanged.
class ChatStreamConverter {
 public:
  explicit ChatStreamConverter(const ChatConversion& conversion);

  // The payloads to send for one engine payload, in order (zero, one or two). kProtocol when
  // the engine's payload is not a completions chunk, an error event or [DONE]; the caller then
  // sends stream_error_payload() and [DONE], as vLLM does after a failure.
  Result<std::vector<std::string>> convert(std::string_view payload);

 private:
  std::uint32_t prompt_tokens_;
  bool continuous_usage_;
  bool role_sent_ = false;
};

// A non-streaming 200 text_completion body → the chat.completion body. kProtocol when the body
// is not a completions response.
Result<std::string> completion_to_chat_response(std::string_view completion_body);

// vLLM's in-stream error event (Python json.dumps spacing), code 500, InternalServerError.
std::string stream_error_payload(std::string_view message);

}  // namespace omni::proxy
