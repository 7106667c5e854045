// A choice's text and where it stops, as vLLM's detokenizer and stop checker decide: stop
// strings (cut, or kept with include_stop_str_in_output; they win over the length limit),
// stop token ids and EOS (their text not shown; min_tokens first), held-back text while a stop
// string could still be forming, incomplete UTF-8 held until it completes.
#include <gtest/gtest.h>

#include "serve/text_stream.hpp"

namespace omni::serve {
namespace {

// The built-in codec: ids 0..255 are bytes.
std::vector<std::uint32_t> bytes(std::string_view s) {
  std::vector<std::uint32_t> out;
  for (const char c : s) out.push_back(static_cast<unsigned char>(c));
  return out;
}

struct TextStreamTest : ::testing::Test {
  std::unique_ptr<sim::TextCodec> codec = sim::make_builtin_codec();
  std::vector<std::uint32_t> prompt = bytes("Q: ");
};

Finish feed(TextStream& t, std::string_view s) {
  Finish f = Finish::kNone;
  for (const std::uint32_t id : bytes(s)) {
    f = t.push(id);
    if (f != Finish::kNone) break;
  }
  return f;
}

TEST_F(TextStreamTest, AStopStringCutsTheTextAndWinsOverTheLength) {
  StopRules r;
  r.stop = {"END"};
  r.max_tokens = 100;
  TextStream t(*codec, r, prompt);
  EXPECT_EQ(feed(t, "hello E"), Finish::kNone);
  EXPECT_EQ(t.text(), "hello E");
  EXPECT_EQ(t.shown(), 5u);  // "hello" shown, " E" held: it could be "END"'s start... or not
  EXPECT_EQ(feed(t, "ND more"), Finish::kStop);
  EXPECT_EQ(t.text(), "hello ");
  EXPECT_EQ(t.stop_reason(), "\"END\"");
  EXPECT_EQ(t.shown(), t.text().size());
  // At the length limit too, the stop string decides.
  r.max_tokens = 4;
  TextStream u(*codec, r, prompt);
  EXPECT_EQ(feed(u, "aEND"), Finish::kStop);
  EXPECT_EQ(u.text(), "a");
}

TEST_F(TextStreamTest, IncludeStopStrInOutputKeepsIt) {
  StopRules r;
  r.stop = {"!!"};
  r.include_stop_str_in_output = true;
  TextStream t(*codec, r, prompt);
  EXPECT_EQ(feed(t, "wow!!x"), Finish::kStop);
  EXPECT_EQ(t.text(), "wow!!");
}

TEST_F(TextStreamTest, StopTokensAndEosEndWithoutTheirText) {
  StopRules r;
  r.stop_token_ids = {'#'};
  r.eos = '$';
  TextStream t(*codec, r, prompt);
  EXPECT_EQ(feed(t, "ab#"), Finish::kStop);
  EXPECT_EQ(t.text(), "ab");
  EXPECT_EQ(t.stop_reason(), "35");
  TextStream e(*codec, r, prompt);
  EXPECT_EQ(feed(e, "ab$"), Finish::kStop);
  EXPECT_EQ(e.text(), "ab");
  EXPECT_EQ(e.stop_reason(), "null");
  r.ignore_eos = true;
  TextStream i(*codec, r, prompt);
  EXPECT_EQ(feed(i, "ab$c"), Finish::kNone);
  EXPECT_EQ(i.text(), "ab$c");
}

TEST_F(TextStreamTest, NothingStopsBeforeMinTokensAndTheLengthLimitEnds) {
  StopRules r;
  r.stop_token_ids = {'#'};
  r.stop = {"x"};
  r.min_tokens = 3;
  r.max_tokens = 6;
  TextStream t(*codec, r, prompt);
  EXPECT_EQ(feed(t, "#x#"), Finish::kNone);  // 3 tokens: not past min_tokens yet
  EXPECT_EQ(feed(t, "ab"), Finish::kNone);
  EXPECT_EQ(feed(t, "c"), Finish::kLength);
  EXPECT_EQ(t.tokens().size(), 6u);
}

TEST_F(TextStreamTest, IncompleteUtf8WaitsForItsBytes) {
  StopRules r;
  TextStream t(*codec, r, prompt);
  const std::string euro = "\xE2\x82\xAC";
  t.push(static_cast<unsigned char>(euro[0]));
  t.push(static_cast<unsigned char>(euro[1]));
  EXPECT_EQ(t.text(), "");
  t.push(static_cast<unsigned char>(euro[2]));
  EXPECT_EQ(t.text(), euro);
}

}  // namespace
}  // namespace omni::serve

namespace omni::serve {
namespace {

TEST(ValidUtf8, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(valid_utf8("abc"), "abc");
  EXPECT_EQ(valid_utf8("\xE2\x82\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(valid_utf8("a\x80z"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(valid_utf8("\xE2\x82z"), "\xEF\xBF\xBDz");  // one maximal subpart, one U+FFFD
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

}  // namespace
}  // namespace omni::serve
