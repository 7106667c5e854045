// Split pre-tokenizer behaviours (Hugging Face's documented "the-final--countdown" examples),
// Digits, and the Oniguruma -> PCRE2 pattern translation.
#include <gtest/gtest.h>

#include "pre_tokenizer.hpp"
#include "regex.hpp"

namespace omni::tokenizer {
namespace {

std::vector<std::string> pieces(const PreTokenizer& p, std::string_view text) {
  RegexScratch scratch;
  std::vector<Piece> in{{0, static_cast<std::uint32_t>(text.size())}};
  std::vector<Piece> out;
  EXPECT_TRUE(p.split(text, in, out, scratch).ok());
  std::vector<std::string> result;
  for (const Piece& piece : out)
    result.emplace_back(text.substr(piece.begin, piece.end - piece.begin));
  return result;
}

using Strings = std::vector<std::string>;

TEST(Split, EveryDelimiterBehaviour) {
  const std::string_view text = "the-final--countdown";
  const auto split = [&](SplitBehavior b, bool invert = false) {
    return pieces(**make_split("-", true, b, invert), text);
  };
  EXPECT_EQ(split(SplitBehavior::kRemoved), (Strings{"the", "final", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kIsolated), (Strings{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithPrevious),
            (Strings{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kMergedWithNext), (Strings{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(SplitBehavior::kContiguous), (Strings{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split(SplitBehavior::kRemoved, true), (Strings{"-", "-", "-"}));
}

TEST(Split, RegexPiecesCoverTheText) {
  auto p = make_split(R"(\p{N}{1,3})", false, SplitBehavior::kIsolated, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(pieces(**p, "ab1234567c"), (Strings{"ab", "123", "456", "7", "c"}));
}

TEST(Split, SpaceClassIncludesNextLineAsOnigurumaDoes) {
  EXPECT_EQ(translate_pattern(R"(\s+(?!\S))"), R"([\s\x{85}]+(?![^\s\x{85}]))");
  EXPECT_EQ(translate_pattern(R"([^\s\p{L}])"), R"([^\s\x{85}\p{L}])");
  EXPECT_EQ(translate_pattern(R"([\]\s])"), R"([\]\s\x{85}])");
  auto p = make_split(R"(\s+)", false, SplitBehavior::kIsolated, false);
  EXPECT_EQ(pieces(**p, "a\xC2\x85 b"), (Strings{"a", "\xC2\x85 ", "b"}));
}

TEST(Digits, IndividualOrRuns) {
  EXPECT_EQ(pieces(*make_digits(true), "a12b3"), (Strings{"a", "1", "2", "b", "3"}));
  EXPECT_EQ(pieces(*make_digits(false), "a12b3"), (Strings{"a", "12", "b", "3"}));
}

TEST(ByteLevel, Gpt2RegexWhenAsked) {
  auto p = make_byte_level_pre_tokenizer(false, true);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(pieces(**p, "Hello world's  42!"), (Strings{"Hello", " world", "'s", " ", " 42", "!"}));
}

}  // namespace
}  // namespace omni::tokenizer
