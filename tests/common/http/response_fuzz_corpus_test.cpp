// Replays the libFuzzer corpus of fuzz/http_response through the same entry the fuzzer calls,
// on every build (gcc too). Hand-written seeds carry their expectation in their name:
// valid_* parse into at least one complete response, reject_* are refused as malformed or over
// the limits, truncated_* end quietly; files the fuzzer adds only have to pass without a crash.
#include <gtest/gtest.h>

#include <string>

#include "response_parse.hpp"
#include "support/corpus.hpp"

namespace omni::http::detail {
namespace {

ResponseFuzzOutcome replay(const std::string& bytes) {
  return fuzz_parse_response(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

TEST(HttpResponseFuzzCorpus, EveryFileParsesAsItsNameSays) {
  std::size_t named = 0;
  for (const auto& file : test_support::read_corpus(OMNI_HTTP_RESPONSE_CORPUS_DIR)) {
    const std::string name = file.path.filename().string();
    const ResponseFuzzOutcome outcome = replay(file.bytes);
    if (name.rfind("valid_", 0) == 0) {
      ++named;
      EXPECT_GE(outcome.responses, 1u) << name;
      EXPECT_FALSE(outcome.refused) << name;
    } else if (name.rfind("reject_", 0) == 0) {
      ++named;
      EXPECT_TRUE(outcome.refused) << name;
    } else if (name.rfind("truncated_", 0) == 0) {
      ++named;
      EXPECT_EQ(outcome.responses, 0u) << name;
      EXPECT_FALSE(outcome.refused) << name;
    }
  }
  EXPECT_GE(named, 15u);
}

TEST(HttpResponseFuzzCorpus, KeepAliveResponsesFollowOneAnother) {
  EXPECT_EQ(replay("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
                   "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"
                   "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nc"
                   "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nd")
                .responses,
            3u);  // nothing is read past a response that closes the connection
}

TEST(HttpResponseFuzzCorpus, BodiesArriveWholeThroughSmallPieces) {
  // 4,096 bytes (the fuzz limit) in 7-byte pieces, chunked and not.
  const std::string body(4096, 'x');
  EXPECT_EQ(replay("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n" + body).responses, 1u);
  EXPECT_EQ(replay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n" + body +
                   "\r\n0\r\n\r\n")
                .responses,
            1u);
  EXPECT_TRUE(replay("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1001\r\n" + body +
                     "x\r\n0\r\n\r\n")
                  .refused);
}

TEST(HttpResponseFuzzCorpus, ParserKeepsHeadersInOrderAndResetsThemAfterAnInterimHead) {
  ResponseParser parser;
  boost::system::error_code ec;
  const std::string interim = "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n";
  parser.put(boost::asio::buffer(interim), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(parser.status(), 103);
  ResponseParser final_parser;
  const std::string head = "HTTP/1.1 200 OK\r\nB: 2\r\nA: 1\r\nContent-Length: 0\r\n\r\n";
  final_parser.put(boost::asio::buffer(head), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(final_parser.is_done());
  EXPECT_EQ(final_parser.status(), 200);
  ASSERT_EQ(final_parser.headers().size(), 3u);
  EXPECT_EQ(final_parser.headers().begin()->first, "B");
  EXPECT_EQ(final_parser.headers().get("a").value_or(""), "1");
}

}  // namespace
}  // namespace omni::http::detail
