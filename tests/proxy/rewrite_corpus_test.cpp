// Replays the fuzz corpus (fuzz/proxy_rewrite/corpus) through the same checks as the fuzz
// target: every input is rewritten or refused cleanly, never crashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "rewrite_fuzz_checks.hpp"

namespace omni::proxy {
namespace {

TEST(ProxyRewriteCorpus, EveryInputRewritesOrFailsCleanly) {
  const std::filesystem::path dir = OMNI_PROXY_REWRITE_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string failure = fuzz::check_rewrites(input);
    EXPECT_TRUE(failure.empty()) << entry.path() << ": " << failure;
  }
  EXPECT_GT(files, 5u);
}

}  // namespace
}  // namespace omni::proxy
