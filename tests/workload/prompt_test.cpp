#include <gtest/gtest.h>

#include <set>

#include "omni/workload/prompt.hpp"

namespace omni::workload {
namespace {

RequestSpec spec_of(std::uint32_t tokens, std::vector<std::uint64_t> ids) {
  RequestSpec spec;
  spec.input_tokens = tokens;
  spec.hash_ids = std::move(ids);
  return spec;
}

TEST(Prompt, EqualIdsGiveEqualBlocksAndDifferentIdsDifferentOnes) {
  const PromptOptions options;
  auto a = prompt_tokens(spec_of(1024, {7, 8}), options);
  auto b = prompt_tokens(spec_of(1024, {7, 9}), options);
  ASSERT_EQ(a.size(), 1024u);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 512, b.begin()));
  EXPECT_FALSE(std::equal(a.begin() + 512, a.end(), b.begin() + 512));
}

TEST(Prompt, PartialTailIsAPrefixOfTheFullBlock) {
  const PromptOptions options;
  auto full = prompt_tokens(spec_of(1024, {1, 2}), options);
  auto partial = prompt_tokens(spec_of(700, {1, 2}), options);
  ASSERT_EQ(partial.size(), 700u);
  EXPECT_TRUE(std::equal(partial.begin(), partial.end(), full.begin()));
}

TEST(Prompt, TokensStayInsideTheVocabularyRange) {
  PromptOptions options;
  options.vocab_begin = 10;
  options.vocab_end = 20;
  std::set<std::uint32_t> seen;
  for (auto t : prompt_tokens(spec_of(512, {42}), options)) {
    EXPECT_GE(t, 10u);
    EXPECT_LT(t, 20u);
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 10u);  // 512 draws cover a 10-token range
}

TEST(Prompt, SaltChangesTheBlocks) {
  PromptOptions salted;
  salted.salt = 1;
  EXPECT_NE(prompt_tokens(spec_of(512, {3}), PromptOptions{}),
            prompt_tokens(spec_of(512, {3}), salted));
}

TEST(Prompt, TextFormKeepsPrefixesAndSeparatesWords) {
  std::string w0, w1, w100;
  append_token_word(0, w0);
  append_token_word(1, w1);
  append_token_word(100, w100);
  EXPECT_EQ(w0, "ba");
  EXPECT_EQ(w1, "be");
  EXPECT_EQ(w100, "babe");
  const std::vector<std::uint32_t> tokens = {0, 1, 100};
  EXPECT_EQ(tokens_to_text(tokens), "ba be babe");
  const std::vector<std::uint32_t> prefix = {0, 1};
  EXPECT_EQ(tokens_to_text(tokens).rfind(tokens_to_text(prefix), 0), 0u);
}

}  // namespace
}  // namespace omni::workload
