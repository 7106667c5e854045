// The real DeepSeek-V3 and Qwen3 tokenizers (from .tools/, installed by scripts/install-deps.sh;
// skipped with a reason when absent): the prefix cache against full encodes, streaming decode,
// round trips, and bad input (invalid UTF-8, NUL bytes, 10 MB inputs). Identity with Hugging Face
// on the whole corpus is tests/tokenizer/identity_test.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "omni/tokenizer/tokenizer.hpp"

namespace omni::tokenizer {
namespace {

using Ids = std::vector<TokenId>;

class ModelsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string dir =
        std::string(OMNI_TOKENIZER_MODELS_DIR) + "/tokenizer-" + GetParam() + "/models";
    if (!std::filesystem::exists(dir + "/tokenizer.json")) {
      GTEST_SKIP() << dir
                   << " is missing: run scripts/install-deps.sh to fetch the reference tokenizers";
    }
    // Loading parses ~8 MB of JSON: once per model for the whole suite.
    static std::map<std::string, std::shared_ptr<const Tokenizer>> loaded_models;
    auto& slot = loaded_models[dir];
    if (!slot) {
      auto loaded = Tokenizer::load(dir);
      ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
      slot = *loaded;
    }
    tok_ = slot;
  }
  Ids encode(std::string_view text) {
    auto ids = tok_->encode(text);
    EXPECT_TRUE(ids.ok());
    return ids.ok() ? *ids : Ids{};
  }
  std::shared_ptr<const Tokenizer> tok_;
};

// Pieces that stress pre-token boundaries when a conversation is cut between them.
const std::vector<std::string> kPieces = {"Hello",
                                          " world",
                                          "  ",
                                          "\n",
                                          "\n\n",
                                          "123",
                                          "4567",
                                          "\xE4\xBD\xA0\xE5\xA5\xBD",
                                          "\xE3\x81\x93\xE3\x82\x93",
                                          "<|im_start|>",
                                          "<|im_",
                                          "end|>",
                                          "<\xEF\xBD\x9C"
                                          "User\xEF\xBD\x9C>",
                                          "<\xEF\xBD\x9C",
                                          "'s",
                                          "'",
                                          "s",
                                          "e\xCC\x81",
                                          "\xCC\x81",
                                          "\xE1\x84\x80",
                                          "\xE1\x85\xA1",
                                          "\xF0\x9F\x98\x80",
                                          "\xE2\x80\x8D",
                                          "!",
                                          "?!",
                                          " (",
                                          "x",
                                          "\t",
                                          "\r\n",
                                          "don",
                                          "'t",
                                          "café",
                                          "\xC2\x85",
                                          "\xE3\x80\x80"};

TEST_P(ModelsTest, PrefixCacheGivesTheIdsOfAFullEncode) {
  std::mt19937 rng(7);
  Encoder cached(tok_);
  Encoder full(tok_);
  for (int conversation = 0; conversation < 60; ++conversation) {
    std::string text;
    for (int turn = 0; turn < 12; ++turn) {
      const int grow = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < grow; ++i) text += kPieces[rng() % kPieces.size()];
      if (rng() % 5 == 0 && text.size() > 2)
        text.resize(text.size() - 1 - rng() % 2);  // edits, not only growth
      auto a = cached.encode_incremental(text);
      auto b = full.encode(text);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a, *b) << "conversation " << conversation << " turn " << turn << ": '" << text
                        << "'";
    }
  }
  EXPECT_GT(cached.stats().prefix_reuses, 100u);
}

// A whitespace run's end is decided two characters past it: after "<19 NBSP>'s" the run splits
// before its last NBSP, but a new text whose run goes on ("<30 NBSP>\r\n") must not keep that
// split (found by the identity corpus: the prefix-cached ids differed from a full encode).
TEST_P(ModelsTest, PrefixCacheNeverKeepsAWhitespaceRunThatGoesOnInTheNewText) {
  std::string nbsp;
  for (int i = 0; i < 19; ++i) nbsp += "\xC2\xA0";
  std::string longer = nbsp;
  for (int i = 0; i < 11; ++i) longer += "\xC2\xA0";
  // And "\n" + 8 spaces at the end of a text is "\n", "<8 spaces>", but with "\n.TH" after it
  // the whole run up to the last newline is one pre-token.
  const std::string manpage = "follows the default description in\n        ";
  for (const std::string& first :
       {nbsp + "'s \n \nmore", nbsp + "x", std::string("  \tab"), manpage}) {
    for (const std::string& second : {longer + "\r\n\r\nnext", nbsp + " \n", std::string("  \t  b"),
                                      manpage + "\n.TH \"GCLOUD\" 1\n\n\n.SH"}) {
      Encoder cached(tok_);
      ASSERT_TRUE(cached.encode_incremental(first).ok());
      auto again = cached.encode_incremental(second);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(*again, encode(second)) << "after '" << first << "'";
    }
  }
}

TEST_P(ModelsTest, PrefixCacheAddsSpecialTokensLikeEncode) {
  Encoder cached(tok_);
  const EncodeOptions special{true};
  auto first = cached.encode_incremental("Hi there", special);
  auto second = cached.encode_incremental("Hi there, friend", special);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*second, *tok_->encode("Hi there, friend", special));
}

TEST_P(ModelsTest, StreamingDecodeNeverSplitsACharacterAndMatchesDecode) {
  const std::string text =
      "Tokyo \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x91\xA9\xF0\x9F\x8F\xBD\xE2\x80\x8D\xF0\x9F\x92\xBB "
      "caf\xC3\xA9 <|im_end|> 12345";
  const Ids ids = encode(text);
  Detokenizer stream(tok_);
  std::string joined;
  for (TokenId id : ids) {
    const std::string part = stream.push(id);
    EXPECT_EQ(tok_->decode(Ids{}), "");
    // Each emitted part is whole characters: valid UTF-8 on its own.
    EXPECT_EQ(part.find("\xEF\xBF\xBD"), std::string::npos) << "id " << id;
    joined += part;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, tok_->decode(ids));
}

TEST_P(ModelsTest, StreamingDecodeOfArbitraryIdsEqualsDecode) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    Ids ids;
    for (int i = 0; i < 40; ++i) ids.push_back(static_cast<TokenId>(rng() % tok_->vocab_size()));
    Detokenizer stream(tok_);
    std::string joined;
    for (TokenId id : ids) joined += stream.push(id);
    joined += stream.finish();
    ASSERT_EQ(joined, tok_->decode(ids)) << "round " << round;
  }
}

TEST_P(ModelsTest, DecodeRoundTripsText) {
  const std::string text =
      "def f(x):\n    return x ** 2  # \xE5\xB9\xB3\xE6\x96\xB9\n\n\n\tend \xF0\x9F\x9A\x80";
  EXPECT_EQ(tok_->decode(encode(text)), text);
}

TEST_P(ModelsTest, SpecialTokensInTextAreSingleIds) {
  const std::string special = GetParam() == "qwen3"
                                  ? "<|im_start|>"
                                  : "<\xEF\xBD\x9C"
                                    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  const auto id = tok_->token_to_id(special);
  ASSERT_TRUE(id.has_value());
  const Ids ids = encode("a" + special + "b");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *id), 1);
  EXPECT_TRUE(tok_->is_special(*id));
  EXPECT_EQ(tok_->decode(ids, DecodeOptions{true}), "ab");
}

TEST_P(ModelsTest, InvalidUtf8IsReadAsReplacementCharacters) {
  const Ids broken = encode("ab\xFF\xC3(cd\xE4\xBD");
  EXPECT_EQ(broken, encode("ab\xEF\xBF\xBD\xEF\xBF\xBD(cd\xEF\xBF\xBD"));
}

TEST_P(ModelsTest, NulBytesAreOrdinaryCharacters) {
  const std::string text("a\0b\0\0c", 6);
  const Ids ids = encode(text);
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(tok_->decode(ids), text);
}

// Sanitizer builds run ~10x slower: they check the same paths on a fifth of the bytes.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kBigInput = 2u << 20;
#else
constexpr std::size_t kBigInput = 10u << 20;
#endif

std::string repeat_to(const std::string& unit, std::size_t bytes) {
  std::string big;
  big.reserve(bytes + unit.size());
  while (big.size() < bytes) big += unit;
  return big;
}

TEST_P(ModelsTest, TenMegabyteInputsEncode) {
  for (const std::string& unit :
       {std::string("ab cd, 12345\n"), std::string("\xE4\xBD\xA0"), std::string(" \n")}) {
    const std::string big = repeat_to(unit, unit.size() > 3 ? kBigInput : kBigInput / 5);
    auto ids = tok_->encode(big);
    ASSERT_TRUE(ids.ok()) << ids.error().to_string();
    EXPECT_EQ(tok_->decode(*ids).size(), big.size());
  }
}

// One pre-token of a megabyte (a run of one letter, or of spaces) takes the O(n log n) merge
// path; a 10 MB one takes seconds (bench it, do not unit-test it).
TEST_P(ModelsTest, MegabyteSingleWordsEncode) {
  for (const std::string& unit : {std::string("a"), std::string(" ")}) {
    const std::string big = repeat_to(unit, kBigInput / 10);
    auto ids = tok_->encode(big);
    ASSERT_TRUE(ids.ok()) << ids.error().to_string();
    EXPECT_LT(ids->size(), big.size() / 4);
    EXPECT_EQ(tok_->decode(*ids), big);
  }
}

INSTANTIATE_TEST_SUITE_P(Real, ModelsTest, ::testing::Values("deepseek_v3", "qwen3"));

}  // namespace
}  // namespace omni::tokenizer
