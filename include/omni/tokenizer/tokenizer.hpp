// omni_tokenizer: Hugging Face tokenizer.json (byte-level BPE families: DeepSeek-V3/R1, Qwen3,
// Llama-3, GPT-2 style) encoded and decoded natively, with ids identical to the Rust
// `tokenizers` library. A pure library: no I/O besides load(), no threads, no clock.
//
//   text --added tokens (raw)--> segments --normalizer--> --added tokens (normalized)-->
//        --pre-tokenizer--> pieces --BPE (word cache)--> ids --post-processor--> ids
//
// Threading: a Tokenizer is immutable after load and may be shared by any number of threads;
// an Encoder or a Detokenizer belongs to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::tokenizer {

using TokenId = std::uint32_t;

struct EncodeOptions {
  // Apply the post-processor (BOS/EOS and the like, as tokenizer.json and, for processors that
  // add nothing, tokenizer_config.json's add_bos_token / add_eos_token say).
  bool add_special_tokens = false;
};

struct DecodeOptions {
  bool skip_special_tokens = false;
};

class Tokenizer {
 public:
  struct Impl;

  // `path` is a tokenizer.json, a tokenizer_config.json (its sibling tokenizer.json is read), or
  // a directory holding them. tokenizer_config.json is optional. A component this library does
  // not implement is an `unsupported` error naming it.
  static Result<std::shared_ptr<const Tokenizer>> load(const std::string& path);
  static Result<std::shared_ptr<const Tokenizer>> from_json(
      std::string_view tokenizer_json, std::string_view tokenizer_config_json = {});

  explicit Tokenizer(std::unique_ptr<Impl> impl);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Encodes with a fresh, throw-away Encoder; hold an Encoder to keep its caches. Invalid UTF-8
  // is read as Rust's from_utf8_lossy would (each maximal invalid subpart is one U+FFFD).
  Result<std::vector<TokenId>> encode(std::string_view text,
                                      const EncodeOptions& options = {}) const;
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

  std::size_t vocab_size() const noexcept;
  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  bool is_special(TokenId id) const noexcept;
  std::optional<TokenId> bos_id() const noexcept;
  std::optional<TokenId> eos_id() const noexcept;
  // tokenizer_config.json as read ("{}" when there was none), for chat templates.
  const std::string& config_json() const noexcept;

  const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct EncoderStats {
  std::uint64_t encodes = 0;
  std::uint64_t prefix_reuses = 0;  // encode_incremental calls that reused earlier work
  std::uint64_t reused_bytes = 0;   // input bytes not tokenized again thanks to that
  std::uint64_t word_cache_hits = 0;
  std::uint64_t word_cache_misses = 0;
};

// Encoding state for one thread: a bounded word cache (pre-token -> ids) and the prefix cache.
class Encoder {
 public:
  explicit Encoder(std::shared_ptr<const Tokenizer> tokenizer,
                   std::size_t word_cache_entries = 1u << 16);
  ~Encoder();
  Encoder(Encoder&&) noexcept;
  Encoder& operator=(Encoder&&) noexcept;

  Result<std::vector<TokenId>> encode(std::string_view text, const EncodeOptions& options = {});

  // Same ids as encode(text), reusing the work of the previous encode_incremental() call for the
  // longest common prefix of the two texts, back to the last pre-token boundary that the rest of
  // the text cannot move (multi-turn chat: each turn's prompt extends the last one).
  Result<std::vector<TokenId>> encode_incremental(std::string_view text,
                                                  const EncodeOptions& options = {});

  const EncoderStats& stats() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Streaming decode: push ids one by one, get text as soon as it is complete. Never returns part
// of a UTF-8 character; the concatenation of every push() and finish() equals decode(all ids)
// for byte-level decoders (others: see docs/tokenizer.md).
class Detokenizer {
 public:
  explicit Detokenizer(std::shared_ptr<const Tokenizer> tokenizer, DecodeOptions options = {});
  ~Detokenizer();
  std::string push(TokenId id);
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace omni::tokenizer
