// Prompt materialisation: hash ids to token ids (and to text, for chat endpoints).
//
// Block h always becomes the same 512 token ids, drawn from a SeededRandom seeded by h (and
// an optional salt), in [vocab_begin, vocab_end). The last block of a prompt is cut to the
// prompt's length, so a partial tail block is a prefix of the full block with the same id.
// Text form: token id t becomes one lowercase pseudo-word (consonant-vowel syllables spelled
// from t), separated by spaces; equal token prefixes give equal text prefixes, which is what
// keeps an engine's prefix cache hits, although a real tokenizer will count other tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "omni/workload/request_spec.hpp"

namespace omni::workload {

struct PromptOptions {
  // Token ids are drawn from [vocab_begin, vocab_end): away from the special tokens at the
  // bottom of most vocabularies and below the size of the smallest common one (32000).
  std::uint32_t vocab_begin = 1000;
  std::uint32_t vocab_end = 30000;
  std::uint64_t salt = 0;  // a different salt gives different (equally shared) blocks
};

// The 512 token ids of block `hash_id` (out.size() must be <= 512; a shorter span gets the
// first out.size() of them).
void block_tokens(std::uint64_t hash_id, const PromptOptions& options,
                  std::span<std::uint32_t> out);
// All input_tokens token ids of `spec`.
std::vector<std::uint32_t> prompt_tokens(const RequestSpec& spec, const PromptOptions& options);
// Appends the pseudo-word of `token` ("kabo").
void append_token_word(std::uint32_t token, std::string& out);
// The text form of a token list: words separated by single spaces.
std::string tokens_to_text(std::span<const std::uint32_t> tokens);

}  // namespace omni::workload
