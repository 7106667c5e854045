// The loaded tokenizer (Tokenizer::Impl) and the encode pipeline shared by Tokenizer, Encoder
// and the prefix cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "added_tokens.hpp"
#include "bpe.hpp"
#include "decoder.hpp"
#include "flat_map.hpp"
#include "normalizer.hpp"
#include "omni/tokenizer/tokenizer.hpp"
#include "pre_tokenizer.hpp"
#include "regex.hpp"

namespace omni::tokenizer {

// What the post-processor puts around a single sequence when add_special_tokens is set.
struct PostProcessing {
  std::vector<TokenId> prefix;
  std::vector<TokenId> suffix;
  bool from_tokenizer_json = false;  // a template-like processor was configured
};

// A pre-token boundary in the input where encoding may restart (see Encoder::encode_incremental).
struct Checkpoint {
  std::size_t begin;        // raw byte offset where the pre-token starts
  std::size_t end;          // and ends
  std::size_t token_index;  // ids emitted before it
};

struct EncodeScratch {
  explicit EncodeScratch(std::size_t word_cache_entries) : word_cache_capacity(word_cache_entries) {
    word_cache.reserve(word_cache_entries > 64 ? 64 : word_cache_entries);  // grows on demand
  }
  RegexScratch regex;
  StringMap<std::pair<std::uint32_t, std::uint32_t>>
      word_cache;  // word -> (offset, count) in word_ids
  std::vector<TokenId> word_ids;
  std::size_t word_cache_capacity;
  std::vector<Piece> pieces_in;
  std::vector<Piece> pieces_out;
  EncoderStats stats;
};

struct Tokenizer::Impl {
  BpeModel model;
  std::vector<std::string> spellings;      // id -> token string (model or added)
  std::vector<std::string> decoded_bytes;  // id -> bytes under the ByteLevel decoder (fast path)
  std::vector<bool> special;
  StringMap<TokenId> spelling_to_id;
  AddedTokenMatcher raw_added;         // normalized == false: matched on the raw text
  AddedTokenMatcher normalized_added;  // normalized == true: matched after normalization
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Decoder> decoder;
  PostProcessing post;
  std::optional<TokenId> bos;
  std::optional<TokenId> eos;
  std::string config_json = "{}";
  bool prefix_cache_safe = true;

  // Encodes valid UTF-8 `text` (no post-processing) appending to `out`. When `checkpoints` is
  // given, restart points are recorded with offsets shifted by `base`.
  Status encode_text(std::string_view text, std::vector<TokenId>& out, EncodeScratch& scratch,
                     std::vector<Checkpoint>* checkpoints, std::size_t base) const;
  void post_process(std::vector<TokenId>& ids, const EncodeOptions& options) const;

 private:
  Status encode_segment(std::string_view segment, std::vector<TokenId>& out, EncodeScratch& scratch,
                        std::vector<Checkpoint>* checkpoints, std::size_t base) const;
  Status encode_pieces(std::string_view text, std::vector<TokenId>& out, EncodeScratch& scratch,
                       std::vector<Checkpoint>* checkpoints, std::size_t base) const;
  void encode_word(std::string_view word, std::vector<TokenId>& out, EncodeScratch& scratch) const;
};

// Reads tokenizer.json (+ tokenizer_config.json) into an Impl.
Result<std::unique_ptr<Tokenizer::Impl>> load_impl(std::string_view tokenizer_json,
                                                   std::string_view config_json);

}  // namespace omni::tokenizer
