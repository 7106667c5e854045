// Added tokens (special and not) are found in the text before normalization and
// pre-tokenization, leftmost-longest, as Hugging Face's AddedVocabulary does: a byte trie walked
// from each position whose first byte can start a token (a 256-bit filter skips the rest).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omni::tokenizer {

struct AddedToken {
  std::uint32_t id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

struct AddedMatch {
  std::size_t begin;  // the matched range, whitespace absorbed by lstrip/rstrip included
  std::size_t end;
  std::uint32_t id;
};

class AddedTokenMatcher {
 public:
  void add(const AddedToken& token);
  bool empty() const noexcept { return tokens_.empty(); }
  std::size_t max_length() const noexcept { return max_length_; }
  bool any_strip() const noexcept { return any_strip_; }

  // Appends every match in `text` from `from` on, left to right.
  void find_all(std::string_view text, std::size_t from, std::vector<AddedMatch>& out) const;

  // The longest token starting exactly at `pos` (its length), or 0.
  std::size_t longest_at(std::string_view text, std::size_t pos, std::uint32_t& token_index) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, std::uint32_t>> children;  // sorted by byte
    std::int64_t token = -1;                                        // index into tokens_
  };
  std::uint32_t child(std::uint32_t node, unsigned char b) const;
  std::vector<Node> nodes_{Node{}};
  std::vector<AddedToken> tokens_;
  std::array<bool, 256> first_byte_{};
  std::size_t max_length_ = 0;
  bool any_strip_ = false;
};

}  // namespace omni::tokenizer
