// Replays every file of the SSE parser's fuzz corpus (fuzz/sse_parser/corpus) through the
// parser and checks the fuzzer's invariants, so findings stay fixed in every build, gcc too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "sse_invariants.hpp"

namespace omni::http {
namespace {

#ifndef OMNI_SSE_CORPUS_DIR
#error "OMNI_SSE_CORPUS_DIR must name fuzz/sse_parser/corpus"
#endif

TEST(SseFuzzCorpus, EveryFileKeepsTheInvariants) {
  const std::filesystem::path dir = OMNI_SSE_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(fuzzing::check_sse_invariants(input), "") << entry.path().filename();
    ++files;
  }
  EXPECT_GE(files, 10);
}

TEST(SseFuzzCorpus, ReplayReallyParses) {
  // Guards the replay itself: a corpus entry with known content yields its events.
  const auto outcome = fuzzing::parse_in_pieces("data: {\"a\":1}\n\ndata: [DONE]\n\n", 3);
  EXPECT_TRUE(outcome.ok);
  ASSERT_EQ(outcome.events.size(), 2u);
  EXPECT_EQ(outcome.events[1].data, "[DONE]");
}

}  // namespace
}  // namespace omni::http
