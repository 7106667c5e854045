// Replays the fuzz corpus (fuzz/tokenizer_encode/corpus) through the checks of the fuzz target,
// for both real tokenizers: encode succeeds, the prefix cache agrees with full encodes, the
// streaming detokenizer agrees with decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "omni/tokenizer/tokenizer.hpp"

#include "support/corpus.hpp"

namespace omni::tokenizer {
namespace {

TEST(TokenizerFuzzCorpus, EveryInputEncodesConsistently) {
  const std::filesystem::path corpus = OMNI_TOKENIZER_FUZZ_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(corpus)) << corpus;
  std::size_t models = 0;
  for (const char* name : {"deepseek_v3", "qwen3"}) {
    const std::string dir =
        std::string(OMNI_TOKENIZER_MODELS_DIR) + "/tokenizer-" + name + "/models";
    if (!std::filesystem::exists(dir + "/tokenizer.json")) continue;
    auto tok = Tokenizer::load(dir);
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    ++models;
    Encoder encoder(*tok);
    Encoder cached(*tok);
    std::string previous;
    std::size_t files = 0;
    for (const auto& [path, text] : omni::test_support::read_corpus(corpus)) {
      ++files;
      auto ids = encoder.encode(text);
      ASSERT_TRUE(ids.ok()) << path;
      const std::string extended = previous + text;
      auto incremental = cached.encode_incremental(extended);
      ASSERT_TRUE(incremental.ok());
      EXPECT_EQ(*incremental, *encoder.encode(extended)) << name << " " << path;
      previous = extended;
      Detokenizer stream(*tok);
      std::string joined;
      for (TokenId id : *ids) joined += stream.push(id);
      joined += stream.finish();
      EXPECT_EQ(joined, (*tok)->decode(*ids)) << name << " " << path;
    }
    EXPECT_GE(files, 10u);
  }
  if (models == 0)
    GTEST_SKIP() << "the reference tokenizers in .tools/ are missing: run scripts/install-deps.sh";
}

}  // namespace
}  // namespace omni::tokenizer
