// The BPE model. Words (pre-tokens) start as one symbol per byte (byte-level vocabularies, whose
// tokens are translated to raw bytes at load time) or per character (others, with byte fallback
// to <0xXX> tokens or the unknown token), then the lowest-ranked adjacent pair is merged until
// none is in the merge table. Ties go to the leftmost pair, as in Hugging Face.
//
//   word "hello" -> [h][e][l][l][o] -> [h][e][ll][o] -> [he][ll][o] -> [hell][o] -> [hello]
//
// Short words (the vast majority) use a flat scan over cached pair ranks; long ones (a 10 MB run
// of letters) a heap over a linked list, O(n log n).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flat_map.hpp"

namespace omni::tokenizer {

using TokenId = std::uint32_t;

struct BpeConfig {
  bool byte_level = true;      // vocabulary spelled in the GPT-2 byte alphabet
  bool byte_fallback = false;  // unknown characters become <0xXX> tokens
  bool ignore_merges = false;  // a word that is itself in the vocabulary is one token
  bool fuse_unk = false;       // consecutive unknown symbols become one unknown token
  std::optional<TokenId> unk_id;
};

class BpeModel {
 public:
  // `tokens[id]` is the vocabulary's spelling; `merges` are pairs of spellings in rank order.
  // Returns the spelling of the first merge whose parts or result are not in the vocabulary.
  std::optional<std::string> build(const BpeConfig& config, const std::vector<std::string>& tokens,
                                   const std::vector<std::pair<std::string, std::string>>& merges);

  // Appends the ids of one word (raw bytes, valid UTF-8 unless byte-level) to `out`.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  // The raw bytes of a vocabulary token (byte-level spellings translated), for decoding.
  std::optional<TokenId> find(std::string_view raw) const noexcept;
  bool byte_level() const noexcept { return config_.byte_level; }

 private:
  void initial_symbols(std::string_view word, std::vector<TokenId>& symbols) const;
  std::size_t merge_short(TokenId* symbols, std::size_t n) const;  // returns the new length
  void merge_long(std::vector<TokenId>& symbols) const;
  std::uint32_t rank_of(TokenId left, TokenId right, TokenId& merged) const noexcept;

  BpeConfig config_;
  StringMap<TokenId> raw_to_id_;  // raw bytes (byte-level) or spelling -> id
  PairMap merges_;
  std::int64_t byte_ids_[256] = {};  // byte-level: id of each single byte; byte fallback: <0xXX>
};

}  // namespace omni::tokenizer
