// Replays fuzz/sim_request/corpus through the request parser in every build: each input must
// parse or be refused with a 4xx/5xx error, never crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/request.hpp"

#include "support/corpus.hpp"

namespace omni::sim {
namespace {

TEST(SimRequestCorpus, EveryInputParsesOrIsRefused) {
  const std::filesystem::path dir = OMNI_SIM_REQUEST_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  auto codec = make_builtin_codec();
  const ModelLimits limits{{"m"}, 128};
  std::size_t files = 0;
  for (const auto& [path, input] : omni::test_support::read_corpus(dir)) {
    for (Endpoint e : {Endpoint::kCompletions, Endpoint::kChat}) {
      auto r = parse_generation_request(input, e, limits, *codec);
      if (auto* err = std::get_if<ApiError>(&r)) {
        EXPECT_GE(err->status, 400) << path;
        EXPECT_FALSE(err->message.empty()) << path;
      } else {
        EXPECT_LE(std::get<GenerationRequest>(r).prompt_tokens.size(), 128u);
      }
    }
    ++files;
  }
  EXPECT_GE(files, 5u);
}

}  // namespace
}  // namespace omni::sim
