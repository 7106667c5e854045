// Prompt tokenization behind a seam, so the real tokenizer library (include/omni/tokenizer)
// can replace the built-in fallback without touching the server.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::sim {

// How a chat request becomes prompt text (vLLM's chat-template step).
struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // The request's own template (vLLM's `chat_template` field); empty: the model's.
  std::string_view chat_template;
};

// Threading: encode/decode may be called from any thread concurrently (implementations are
// immutable after construction).
class TextCodec {
 public:
  virtual ~TextCodec() = default;
  // Encodes without adding special tokens (a chat prompt already holds BOS).
  virtual std::vector<std::uint32_t> encode(std::string_view text) const = 0;
  // Encodes with the tokenizer's post-processor (BOS and the like): vLLM's add_special_tokens.
  virtual std::vector<std::uint32_t> encode_with_special_tokens(std::string_view text) const {
    return encode(text);
  }
  virtual std::string decode(std::span<const std::uint32_t> tokens) const = 0;
  // The text of one token (for streaming deltas and token_strs).
  virtual std::string token_text(std::uint32_t token) const = 0;
  virtual std::uint32_t vocab_size() const = 0;
  // Tokens the generator may emit: every one decodes to printable text.
  virtual std::span<const std::uint32_t> generatable() const = 0;
  // Renders a chat request (messages, tools, chat_template_kwargs) to prompt text. This default
  // is the built-in role template (render_chat in request.hpp); a codec that knows the model's
  // chat template renders that instead (chat_codec.hpp). An error is the template's message,
  // answered as a 400.
  virtual Result<std::string> render_chat(const boost::json::object& request,
                                          const ChatRenderOptions& options) const;
};

// The fallback: ids 0..255 are bytes; ids 256.. are a fixed list of common English words,
// each with its leading space (" the"). A prompt is cut into pieces at spaces; a piece equal to
// a word becomes that word's id, anything else becomes its bytes. decode(encode(s)) == s for
// every string, and generated text reads as words.
std::unique_ptr<TextCodec> make_builtin_codec();

}  // namespace omni::sim
