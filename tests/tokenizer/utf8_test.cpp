// UTF-8 helpers: lossy repair identical to Rust's from_utf8_lossy, and the streaming cut point.
#include "utf8.hpp"

#include <gtest/gtest.h>

namespace omni::tokenizer::utf8 {
namespace {

const std::string R(kReplacement);

TEST(Utf8, ValidTextIsUnchanged) {
  const std::string text = "a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80";  // a é 你 😀
  EXPECT_TRUE(is_valid(text));
  EXPECT_EQ(to_valid_lossy(text), text);
}

TEST(Utf8, EachMaximalInvalidSubpartBecomesOneReplacement) {
  // From the Unicode standard's "U+FFFD substitution of maximal subparts" examples.
  EXPECT_EQ(to_valid_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + R + R + R + "b" + R + "c" + R + R + "d");
  EXPECT_EQ(to_valid_lossy("\xED\xA0\x80"), R + R + R);  // a surrogate is three invalid bytes
  EXPECT_EQ(to_valid_lossy("\xC0\xAF"), R + R);          // overlong
  EXPECT_EQ(to_valid_lossy("\xF4\x90\x80\x80"), R + R + R + R);  // above U+10FFFF
  EXPECT_EQ(to_valid_lossy("\xE4\xBD"), R);                      // truncated at the end
  EXPECT_FALSE(is_valid("\xE4\xBD"));
}

TEST(Utf8, NulIsValid) {
  const std::string text("a\0b", 3);
  EXPECT_TRUE(is_valid(text));
  EXPECT_EQ(to_valid_lossy(text), text);
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(complete_prefix_length("ab"), 2u);
  EXPECT_EQ(complete_prefix_length("a\xE4"), 1u);
  EXPECT_EQ(complete_prefix_length("a\xE4\xBD"), 1u);
  EXPECT_EQ(complete_prefix_length("a\xE4\xBD\xA0"), 4u);
  EXPECT_EQ(complete_prefix_length("\xF0\x9F\x98"), 0u);
  // Bytes that can never complete are not held back.
  EXPECT_EQ(complete_prefix_length("a\x80"), 2u);
  EXPECT_EQ(complete_prefix_length("a\xE4"
                                   "b"),
            3u);
  EXPECT_EQ(complete_prefix_length("\xED\xA0"), 2u);  // a surrogate lead never completes
}

}  // namespace
}  // namespace omni::tokenizer::utf8
