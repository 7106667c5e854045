// Replays the fuzz corpus (fuzz/proxy_rewrite/corpus) through the same checks as the fuzz
// target: every input is rewritten or refused cleanly, never crashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "rewrite_fuzz_checks.hpp"

#include "support/corpus.hpp"

namespace omni::proxy {
namespace {

TEST(ProxyRewriteCorpus, EveryInputRewritesOrFailsCleanly) {
  const std::filesystem::path dir = OMNI_PROXY_REWRITE_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::size_t files = 0;
  for (const auto& [path, input] : omni::test_support::read_corpus(dir)) {
    ++files;
    const std::string failure = fuzz::check_rewrites(input);
    EXPECT_TRUE(failure.empty()) << path << ": " << failure;
  }
  EXPECT_GT(files, 5u);
}

}  // namespace
}  // namespace omni::proxy
