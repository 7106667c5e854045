// Decoders of tokenizer.json, with Hugging Face's decode_chain semantics: each decoder maps the
// list of token strings to a new list; the result is their concatenation. Supported: ByteLevel,
// ByteFallback, Fuse, Replace (literal pattern), Strip, Metaspace and Sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace omni::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // True when the decoder is exactly ByteLevel: each token then stands for fixed bytes, and
  // decoding is the lossy UTF-8 reading of their concatenation (the fast path).
  virtual bool is_byte_level() const { return false; }
};

// The bytes a token stands for under the ByteLevel decoder: its characters mapped back through
// the byte alphabet, or its own UTF-8 when a character is outside it (added tokens).
std::string byte_level_token_bytes(const std::string& token);

std::unique_ptr<Decoder> make_byte_level_decoder();
std::unique_ptr<Decoder> make_byte_fallback_decoder();
std::unique_ptr<Decoder> make_fuse_decoder();
std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, std::string content);
std::unique_ptr<Decoder> make_strip_decoder(std::string content, std::size_t start,
                                            std::size_t stop);
std::unique_ptr<Decoder> make_metaspace_decoder(std::string replacement, bool strip_first_space);
std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> parts);

}  // namespace omni::tokenizer
