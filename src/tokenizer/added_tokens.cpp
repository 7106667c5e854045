#include "added_tokens.hpp"

#include <algorithm>

#include <unicode/uchar.h>

#include "utf8.hpp"

namespace omni::tokenizer {
namespace {

constexpr std::uint32_t kNoChild = ~std::uint32_t{0};

bool is_space_byte(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Word characters for single_word tokens: letters, digits and '_'.
bool is_word_char_before(std::string_view text, std::size_t pos) {
  if (pos == 0) return false;
  std::size_t start = pos - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  char32_t cp = 0;
  if (utf8::valid_sequence_length(text, start, cp) == 0) return false;
  return cp == '_' || u_isalnum(static_cast<UChar32>(cp));
}

bool is_word_char_at(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return false;
  char32_t cp = 0;
  if (utf8::valid_sequence_length(text, pos, cp) == 0) return false;
  return cp == '_' || u_isalnum(static_cast<UChar32>(cp));
}

}  // namespace

std::uint32_t AddedTokenMatcher::child(std::uint32_t node, unsigned char b) const {
  const auto& c = nodes_[node].children;
  auto it = std::lower_bound(c.begin(), c.end(), b,
                             [](const auto& p, unsigned char v) { return p.first < v; });
  return it != c.end() && it->first == b ? it->second : kNoChild;
}

void AddedTokenMatcher::add(const AddedToken& token) {
  if (token.content.empty()) return;
  std::uint32_t node = 0;
  for (char ch : token.content) {
    const auto b = static_cast<unsigned char>(ch);
    std::uint32_t next = child(node, b);
    if (next == kNoChild) {
      next = static_cast<std::uint32_t>(nodes_.size());
      nodes_.push_back(Node{});
      auto& c = nodes_[node].children;
      auto it = std::lower_bound(c.begin(), c.end(), b,
                                 [](const auto& p, unsigned char v) { return p.first < v; });
      c.insert(it, {b, next});
    }
    node = next;
  }
  if (nodes_[node].token >= 0) return;  // duplicate content: the first definition wins
  nodes_[node].token = static_cast<std::int64_t>(tokens_.size());
  tokens_.push_back(token);
  first_byte_[static_cast<unsigned char>(token.content[0])] = true;
  max_length_ = std::max(max_length_, token.content.size());
  any_strip_ = any_strip_ || token.lstrip || token.rstrip || token.single_word;
}

std::size_t AddedTokenMatcher::longest_at(std::string_view text, std::size_t pos,
                                          std::uint32_t& token_index) const {
  std::uint32_t node = 0;
  std::size_t best = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<unsigned char>(text[i]));
    if (node == kNoChild) break;
    if (nodes_[node].token >= 0) {
      best = i + 1 - pos;
      token_index = static_cast<std::uint32_t>(nodes_[node].token);
    }
  }
  return best;
}

void AddedTokenMatcher::find_all(std::string_view text, std::size_t from,
                                 std::vector<AddedMatch>& out) const {
  if (tokens_.empty()) return;
  std::size_t previous_end = from;
  std::size_t pos = from;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    std::uint32_t index = 0;
    const std::size_t length = longest_at(text, pos, index);
    if (length == 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    if (token.single_word &&
        (is_word_char_before(text, pos) || is_word_char_at(text, pos + length))) {
      ++pos;
      continue;
    }
    std::size_t begin = pos;
    std::size_t end = pos + length;
    if (token.lstrip) {
      while (begin > previous_end && is_space_byte(text[begin - 1])) --begin;
    }
    if (token.rstrip) {
      while (end < text.size() && is_space_byte(text[end])) ++end;
    }
    out.push_back({begin, end, token.id});
    previous_end = end;
    pos = end;
  }
}

}  // namespace omni::tokenizer
