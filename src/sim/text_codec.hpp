// Prompt tokenization behind a seam, so the real tokenizer library (include/omni/tokenizer)
// can replace the built-in fallback without touching the server.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace omni::sim {

// Threading: encode/decode may be called from any thread concurrently (implementations are
// immutable after construction).
class TextCodec {
 public:
  virtual ~TextCodec() = default;
  virtual std::vector<std::uint32_t> encode(std::string_view text) const = 0;
  virtual std::string decode(std::span<const std::uint32_t> tokens) const = 0;
  // The text of one token (for streaming deltas and token_strs).
  virtual std::string token_text(std::uint32_t token) const = 0;
  virtual std::uint32_t vocab_size() const = 0;
  // Tokens the generator may emit: every one decodes to printable text.
  virtual std::span<const std::uint32_t> generatable() const = 0;
};

// The fallback: ids 0..255 are bytes; ids 256.. are a fixed list of common English words,
// each with its leading space (" the"). A prompt is cut into pieces at spaces; a piece equal to
// a word becomes that word's id, anything else becomes its bytes. decode(encode(s)) == s for
// every string, and generated text reads as words.
std::unique_ptr<TextCodec> make_builtin_codec();

}  // namespace omni::sim
