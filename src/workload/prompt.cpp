// Hash ids to token ids and text; see omni/workload/prompt.hpp.
#include "omni/workload/prompt.hpp"

#include <array>
#include <cassert>

#include "omni/common/random.hpp"

namespace omni::workload {

void block_tokens(std::uint64_t hash_id, const PromptOptions& options,
                  std::span<std::uint32_t> out) {
  assert(out.size() <= kBlockTokens);
  assert(options.vocab_begin < options.vocab_end);
  // The salt is mixed in with an odd constant so that (id, salt) pairs do not collide simply.
  SeededRandom rng(hash_id ^ (options.salt * 0x9E3779B97F4A7C15ULL));
  const std::uint64_t span = options.vocab_end - options.vocab_begin;
  for (auto& token : out) {
    // The modulo bias is below 2^-49 for any vocabulary: irrelevant for synthetic prompts.
    token = options.vocab_begin + static_cast<std::uint32_t>(rng.next_u64() % span);
  }
}

std::vector<std::uint32_t> prompt_tokens(const RequestSpec& spec, const PromptOptions& options) {
  std::vector<std::uint32_t> tokens(spec.input_tokens);
  std::size_t pos = 0;
  for (std::uint64_t id : spec.hash_ids) {
    if (pos >= tokens.size()) break;
    const std::size_t len = std::min<std::size_t>(kBlockTokens, tokens.size() - pos);
    block_tokens(id, options, std::span(tokens).subspan(pos, len));
    pos += len;
  }
  assert(pos == tokens.size() && "hash_ids must cover input_tokens");
  return tokens;
}

void append_token_word(std::uint32_t token, std::string& out) {
  // Consonant-vowel syllables, least significant first: 20 x 5 = 100 per syllable, so every
  // id below 10^6 is at most three syllables and distinct ids give distinct words.
  static constexpr std::array<char, 20> kConsonants = {'b', 'c', 'd', 'f', 'g', 'h', 'j',
                                                       'k', 'l', 'm', 'n', 'p', 'r', 's',
                                                       't', 'v', 'w', 'x', 'y', 'z'};
  static constexpr std::array<char, 5> kVowels = {'a', 'e', 'i', 'o', 'u'};
  do {
    const std::uint32_t syllable = token % 100;
    out.push_back(kConsonants[syllable / 5]);
    out.push_back(kVowels[syllable % 5]);
    token /= 100;
  } while (token != 0);
}

std::string tokens_to_text(std::span<const std::uint32_t> tokens) {
  std::string text;
  text.reserve(tokens.size() * 7);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i != 0) text.push_back(' ');
    append_token_word(tokens[i], text);
  }
  return text;
}

}  // namespace omni::workload
