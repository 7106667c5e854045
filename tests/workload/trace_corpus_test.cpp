// Replays the fuzz corpus of the trace line parsers (a crash found once stays fixed) and reads
// the shared trace files end to end when they are beside the checkout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "omni/workload/trace.hpp"

#include "support/corpus.hpp"

namespace omni::workload {
namespace {

namespace fs = std::filesystem;

// OMNI_TRACES_DIR wins over the folder beside the checkout (as for the tools themselves).
fs::path traces_dir() {
  const char* env = std::getenv("OMNI_TRACES_DIR");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(OMNI_SHARED_TRACES_DIR);
}

TEST(TraceCorpus, EveryInputParsesOrFailsCleanly) {
  const fs::path dir = OMNI_TRACE_CORPUS_DIR;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int files = 0, accepted = 0;
  for (const auto& file : omni::test_support::read_corpus(dir)) {
    const std::string& data = file.bytes;
    accepted += parse_mooncake_line(data).ok() ? 1 : 0;
    accepted += parse_azure_line(data).ok() ? 1 : 0;
    ++files;
  }
  EXPECT_GE(files, 6);
  EXPECT_GE(accepted, 2);  // the corpus holds at least one valid line of each format
}

std::vector<RequestSpec> read_all(const fs::path& path, TraceFormat format) {
  auto w = open_trace_workload(path.string(), format);
  EXPECT_TRUE(w.ok());
  std::vector<RequestSpec> out;
  while (w.ok()) {
    auto next = (*w)->next();
    EXPECT_TRUE(next.ok()) << next.error().to_string();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  return out;
}

TEST(SharedTraces, MooncakeMatchesItsReadme) {
  const fs::path path = traces_dir() / "mooncake_synthetic_trace.jsonl";
  if (!fs::exists(path)) GTEST_SKIP() << "no shared trace at " << path;
  auto reqs = read_all(path, TraceFormat::kMooncake);
  ASSERT_EQ(reqs.size(), 3993u);
  double input = 0;
  for (const auto& r : reqs) {
    input += r.input_tokens;
    ASSERT_LT(r.hash_ids.back(), kGeneratedIdBase);  // the trace's ids always cover the prompt
  }
  EXPECT_NEAR(input / static_cast<double>(reqs.size()), 15325.0, 1.0);
}

TEST(SharedTraces, AzureCodeReadsEveryRow) {
  const fs::path path = traces_dir() / "azure_llm_2023_code.csv";
  if (!fs::exists(path)) GTEST_SKIP() << "no shared trace at " << path;
  auto reqs = read_all(path, TraceFormat::kAzure);
  ASSERT_GT(reqs.size(), 8000u);
  EXPECT_EQ(reqs.front().arrival_s, 0.0);
  EXPECT_GT(reqs.back().arrival_s, 3000.0);  // about one hour
}

}  // namespace
}  // namespace omni::workload
