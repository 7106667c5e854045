// Pre-tokenizers of tokenizer.json: Split (regex or literal, every delimiter behaviour, invert),
// ByteLevel (GPT-2 regex when use_regex), Digits, Whitespace, WhitespaceSplit and Sequence.
// A pre-tokenizer only cuts: pieces are byte ranges of the segment it is given. ByteLevel's byte
// mapping happens in the BPE model, which works on raw bytes; its add_prefix_space is applied by
// the pipeline before pre-tokenization (prefix_space()).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "regex.hpp"

namespace omni::tokenizer {

struct Piece {
  std::uint32_t begin;
  std::uint32_t end;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Cuts each of `in` (ranges of `text`) and appends the results to `out`.
  virtual Status split(std::string_view text, const std::vector<Piece>& in, std::vector<Piece>& out,
                       RegexScratch& scratch) const = 0;
  // True when the text must start with a space before pre-tokenization (ByteLevel's
  // add_prefix_space).
  virtual bool prefix_space() const { return false; }
  // True for ByteLevel: the model must run on the byte-level alphabet.
  virtual bool byte_level() const { return false; }
};

Result<std::unique_ptr<PreTokenizer>> make_split(std::string_view pattern, bool literal,
                                                 SplitBehavior behavior, bool invert);
Result<std::unique_ptr<PreTokenizer>> make_byte_level_pre_tokenizer(bool add_prefix_space,
                                                                    bool use_regex);
std::unique_ptr<PreTokenizer> make_digits(bool individual_digits);
Result<std::unique_ptr<PreTokenizer>> make_whitespace(bool split_only);
std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(
    std::vector<std::unique_ptr<PreTokenizer>> parts);

}  // namespace omni::tokenizer
