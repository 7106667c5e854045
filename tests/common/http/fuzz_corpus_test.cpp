// Replays the libFuzzer corpus of fuzz/http_request through the same entry the fuzzer calls,
// on every build (gcc too). Hand-written seeds carry their expectation in their name:
// valid_* parse into at least one request, reject_<status>_* are refused with that status;
// the files the fuzzer added (hash names) only have to pass without a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "request_parse.hpp"

namespace omni::http::detail {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

FuzzOutcome replay(const std::string& bytes) {
  return fuzz_parse_request(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

TEST(HttpRequestFuzzCorpus, EveryFileParsesAsItsNameSays) {
  const fs::path dir = OMNI_HTTP_FUZZ_CORPUS_DIR;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::size_t files = 0;
  std::size_t named = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string name = entry.path().filename().string();
    const FuzzOutcome outcome = replay(read_file(entry.path()));
    if (name.rfind("valid_", 0) == 0) {
      ++named;
      EXPECT_GE(outcome.requests, 1u) << name;
      EXPECT_EQ(outcome.rejected_status, 0) << name;
    } else if (name.rfind("reject_", 0) == 0) {
      ++named;
      EXPECT_EQ(outcome.rejected_status, std::stoi(name.substr(7, 3))) << name;
    }
  }
  EXPECT_GE(files, 20u);
  EXPECT_GE(named, 20u);
}

TEST(HttpRequestFuzzCorpus, PipelinedRequestsAreCountedAndCloseStopsParsing) {
  EXPECT_EQ(replay("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n").requests,
            2u);
  EXPECT_EQ(replay("GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
                .requests,
            1u);
  EXPECT_EQ(replay("GET /a HTTP/1.1\r\nHost: h\r\n\r\nBREW /b HTTP/1.1\r\n\r\n").rejected_status,
            501);
}

TEST(HttpRequestFuzzCorpus, TruncatedInputIsAQuietClose) {
  const FuzzOutcome outcome = replay("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc");
  EXPECT_EQ(outcome.requests, 0u);
  EXPECT_EQ(outcome.rejected_status, 0);
}

// The smuggling shapes an adversarial probe found: the body of a request whose framing is
// refused must never come back as a request of its own.
TEST(HttpRequestFuzzCorpus, RefusedFramingNeverYieldsASecondRequest) {
  const std::string smuggled = "GET /admin/nodes HTTP/1.1\r\nHost: h\r\n\r\n";
  for (const std::string coding : {"xchunked", "identity", "chunked, gzip", "gzip"}) {
    const FuzzOutcome outcome = replay(
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: " + coding + "\r\n\r\n" + smuggled);
    EXPECT_EQ(outcome.requests, 0u) << coding;
    EXPECT_EQ(outcome.rejected_status, 400) << coding;
  }
}

}  // namespace
}  // namespace omni::http::detail
