// Replays fuzz/sim_request/corpus through the request parser in every build: each input must
// parse or be refused with a 4xx/5xx error, never crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/request.hpp"

namespace omni::sim {
namespace {

TEST(SimRequestCorpus, EveryInputParsesOrIsRefused) {
  const std::filesystem::path dir = OMNI_SIM_REQUEST_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  auto codec = make_builtin_codec();
  const ModelLimits limits{{"m"}, 128};
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    for (Endpoint e : {Endpoint::kCompletions, Endpoint::kChat}) {
      auto r = parse_generation_request(buffer.str(), e, limits, *codec);
      if (auto* err = std::get_if<ApiError>(&r)) {
        EXPECT_GE(err->status, 400) << entry.path();
        EXPECT_FALSE(err->message.empty()) << entry.path();
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
