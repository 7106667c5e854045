// The pipeline's components on small hand-written tokenizer.json files: BPE merge order, byte
// fallback and unknown tokens, added tokens, Split behaviours, post-processors, decoders, and
// clear errors for what is not supported.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "omni/tokenizer/tokenizer.hpp"

namespace omni::tokenizer {
namespace {

namespace json = boost::json;

// A character-level BPE over {a, b, c, space, ...} with the given merges and extras.
json::object toy(const json::array& merges, json::object extra_vocab = {}) {
  json::object vocab{{"a", 0},  {"b", 1},   {"c", 2}, {"ab", 3},
                     {"bc", 4}, {"abc", 5}, {" ", 6}, {"<unk>", 7}};
  for (const auto& [k, v] : extra_vocab) vocab[k] = v;
  json::object model{{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
  return json::object{
      {"version", "1.0"},      {"model", model},           {"added_tokens", json::array{}},
      {"normalizer", nullptr}, {"pre_tokenizer", nullptr}, {"post_processor", nullptr},
      {"decoder", nullptr}};
}

std::shared_ptr<const Tokenizer> load(const json::object& tokenizer,
                                      const std::string& config = {}) {
  auto t = Tokenizer::from_json(json::serialize(tokenizer), config);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return t.ok() ? *t : nullptr;
}

std::vector<TokenId> encode(const Tokenizer& t, std::string_view text, bool special = false) {
  auto ids = t.encode(text, EncodeOptions{special});
  EXPECT_TRUE(ids.ok());
  return ids.ok() ? *ids : std::vector<TokenId>{};
}

using Ids = std::vector<TokenId>;

TEST(Bpe, LowerRankMergesFirst) {
  auto t = load(toy({"b c", "a b", "a bc"}));
  EXPECT_EQ(encode(*t, "abc"), (Ids{5}));  // a [bc] -> [abc]
  auto u = load(toy({"b c", "a b"}));
  EXPECT_EQ(encode(*u, "abc"), (Ids{0, 4}));  // a [bc], no (a, bc) merge
  auto v = load(toy({"a b", "b c", "ab c"}));
  EXPECT_EQ(encode(*v, "abc"), (Ids{5}));  // [ab] c -> [abc]
}

TEST(Bpe, TiesGoToTheLeftmostPair) {
  auto t = load(toy({"a b"}));
  EXPECT_EQ(encode(*t, "ababa"), (Ids{3, 3, 0}));
}

TEST(Bpe, LongWordsTakeTheHeapPathWithTheSameResult) {
  auto t = load(toy({"a b", "ab c"}));
  std::string word;
  Ids want;
  for (int i = 0; i < 500; ++i) {
    word += "abc";
    want.push_back(5);
  }
  word += "ab";
  want.push_back(3);
  EXPECT_EQ(encode(*t, word), want);
}

TEST(Bpe, UnknownCharactersUseTheUnknownTokenFusedWhenAsked) {
  auto doc = toy({});
  doc["model"].as_object()["unk_token"] = "<unk>";
  EXPECT_EQ(encode(*load(doc), "axyb"), (Ids{0, 7, 7, 1}));
  doc["model"].as_object()["fuse_unk"] = true;
  EXPECT_EQ(encode(*load(doc), "axyb"), (Ids{0, 7, 1}));
}

TEST(Bpe, ByteFallbackSpellsUnknownCharactersAsBytes) {
  auto doc = toy({}, json::object{{"<0xC3>", 8}, {"<0xA9>", 9}});
  doc["model"].as_object()["byte_fallback"] = true;
  EXPECT_EQ(encode(*load(doc), "a\xC3\xA9"), (Ids{0, 8, 9}));  // "aé"
}

TEST(Bpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  auto doc = toy({"b c"});
  EXPECT_EQ(encode(*load(doc), "abc"), (Ids{0, 4}));
  doc["model"].as_object()["ignore_merges"] = true;
  EXPECT_EQ(encode(*load(doc), "abc"), (Ids{5}));
}

TEST(AddedTokens, AreMatchedLeftmostLongestBeforeTheModel) {
  auto doc = toy({"a b", "ab c"});
  doc["added_tokens"] = json::array{
      json::object{{"id", 10}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
      json::object{{"id", 11}, {"content", "<s>x"}, {"special", true}, {"normalized", false}},
      json::object{{"id", 12}, {"content", "bca"}, {"special", false}, {"normalized", true}},
  };
  auto t = load(doc);
  EXPECT_EQ(encode(*t, "abc<s>abc<s>xa"), (Ids{5, 10, 5, 11, 0}));
  EXPECT_EQ(encode(*t, "abca"), (Ids{0, 12}));         // the added token wins over the merges
  EXPECT_EQ(t->decode(Ids{5, 10, 5}), "abc <s> abc");  // no decoder: tokens joined by spaces
  EXPECT_EQ(t->decode(Ids{5, 10, 5}, DecodeOptions{true}), "abc abc");
}

TEST(AddedTokens, LstripAndRstripAbsorbWhitespace) {
  auto doc = toy({});
  doc["added_tokens"] = json::array{json::object{{"id", 10},
                                                 {"content", "<m>"},
                                                 {"special", true},
                                                 {"normalized", false},
                                                 {"lstrip", true},
                                                 {"rstrip", true}}};
  EXPECT_EQ(encode(*load(doc), "a  <m>  b"), (Ids{0, 10, 1}));
}

TEST(PostProcessor, TemplateProcessingAddsTokensOnlyWhenAsked) {
  auto doc = toy({});
  doc["added_tokens"] =
      json::array{json::object{{"id", 10}, {"content", "<s>"}, {"special", true}},
                  json::object{{"id", 11}, {"content", "</s>"}, {"special", true}}};
  doc["post_processor"] = json::object{
      {"type", "TemplateProcessing"},
      {"single",
       json::array{json::object{{"SpecialToken", json::object{{"id", "<s>"}, {"type_id", 0}}}},
                   json::object{{"Sequence", json::object{{"id", "A"}, {"type_id", 0}}}},
                   json::object{{"SpecialToken", json::object{{"id", "</s>"}, {"type_id", 0}}}}}},
      {"special_tokens", json::object{{"<s>", json::object{{"id", "<s>"},
                                                           {"ids", json::array{10}},
                                                           {"tokens", json::array{"<s>"}}}},
                                      {"</s>", json::object{{"id", "</s>"},
                                                            {"ids", json::array{11}},
                                                            {"tokens", json::array{"</s>"}}}}}}};
  auto t = load(doc, R"({"bos_token": "<s>", "add_bos_token": true})");
  EXPECT_EQ(encode(*t, "ab", false), (Ids{0, 1}));
  EXPECT_EQ(encode(*t, "ab", true),
            (Ids{10, 0, 1, 11}));  // the config's add_bos_token does not double it
}

TEST(PostProcessor, ConfigAddsBosWhenTheProcessorAddsNothing) {
  auto doc = toy({});
  doc["added_tokens"] =
      json::array{json::object{{"id", 10}, {"content", "<s>"}, {"special", true}}};
  auto t = load(doc, R"({"bos_token": {"content": "<s>"}, "add_bos_token": true})");
  EXPECT_EQ(encode(*t, "ab", true), (Ids{10, 0, 1}));
  EXPECT_EQ(t->bos_id(), std::optional<TokenId>(10));
}

TEST(Decoder, MetaspaceStyleChainRestoresText) {
  auto doc = toy({}, json::object{{"\xE2\x96\x81"
                                   "a",
                                   8},
                                  {"<0xC3>", 9},
                                  {"<0xA9>", 10}});
  doc["decoder"] = json::object{
      {"type", "Sequence"},
      {"decoders",
       json::array{json::object{{"type", "Replace"},
                                {"pattern", json::object{{"String", "\xE2\x96\x81"}}},
                                {"content", " "}},
                   json::object{{"type", "ByteFallback"}}, json::object{{"type", "Fuse"}},
                   json::object{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  auto t = load(doc);
  EXPECT_EQ(t->decode(Ids{8, 1, 9, 10, 8}), "ab\xC3\xA9 a");
  EXPECT_EQ(t->decode(Ids{8, 9}), "a\xEF\xBF\xBD");  // a lone lead byte token is U+FFFD
}

TEST(Load, UnsupportedComponentsAreErrorsNamingThem) {
  const auto expect_unsupported = [](json::object doc, std::string_view name) {
    auto t = Tokenizer::from_json(json::serialize(doc));
    ASSERT_FALSE(t.ok()) << name;
    EXPECT_EQ(t.error().code, ErrorCode::kUnsupported);
    EXPECT_NE(t.error().message.find(name), std::string::npos) << t.error().message;
  };
  auto doc = toy({});
  doc["normalizer"] = json::object{{"type", "BertNormalizer"}};
  expect_unsupported(doc, "BertNormalizer");
  doc = toy({});
  doc["pre_tokenizer"] = json::object{{"type", "Metaspace"}};
  expect_unsupported(doc, "Metaspace");
  doc = toy({});
  doc["model"].as_object()["type"] = "WordPiece";
  expect_unsupported(doc, "WordPiece");
  doc = toy({});
  doc["decoder"] = json::object{{"type", "CTC"}};
  expect_unsupported(doc, "CTC");
  doc = toy({});
  doc["truncation"] = json::object{{"max_length", 8}};
  expect_unsupported(doc, "truncation");
  doc = toy({});
  doc["normalizer"] = json::object{
      {"type", "Replace"}, {"pattern", json::object{{"Regex", " +"}}}, {"content", " "}};
  expect_unsupported(doc, "Replace");
}

TEST(Load, MalformedFilesAreInvalidArgument) {
  for (std::string_view bad :
       {"", "[]", "{", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a x"]}})",
        R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})"}) {
    auto t = Tokenizer::from_json(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  auto missing = Tokenizer::load("/nonexistent/model");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(Load, BadRegexIsAnErrorWithThePattern) {
  auto doc = toy({});
  doc["pre_tokenizer"] = json::object{{"type", "Split"},
                                      {"pattern", json::object{{"Regex", "(unclosed"}}},
                                      {"behavior", "Isolated"}};
  auto t = Tokenizer::from_json(json::serialize(doc));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("(unclosed"), std::string::npos);
}

}  // namespace
}  // namespace omni::tokenizer
