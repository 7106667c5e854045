// Replays every file of the SSE parser's fuzz corpus (fuzz/sse_parser/corpus) through the
// parser and checks the fuzzer's invariants, so findings stay fixed in every build, gcc too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "sse_invariants.hpp"

#include "support/corpus.hpp"

namespace omni::http {
namespace {

#ifndef OMNI_SSE_CORPUS_DIR
#error "OMNI_SSE_CORPUS_DIR must name fuzz/sse_parser/corpus"
#endif

TEST(SseFuzzCorpus, EveryFileKeepsTheInvariants) {
  const std::filesystem::path dir = OMNI_SSE_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int files = 0;
  for (const auto& [path, input] : omni::test_support::read_corpus(dir)) {
    EXPECT_EQ(fuzzing::check_sse_invariants(input), "") << path.filename();
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
