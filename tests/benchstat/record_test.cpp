#include <gtest/gtest.h>

#include "omni/benchstat/record.hpp"

namespace omni::benchstat {
namespace {

StreamChunk chunk(std::string_view data) {
  auto c = parse_stream_chunk(data);
  EXPECT_TRUE(c.ok()) << data;
  return c.ok() ? *c : StreamChunk{};
}

TEST(StreamChunk, RecognisesContentUsageErrorsAndDone) {
  EXPECT_TRUE(chunk("[DONE]").done);
  auto content =
      chunk(R"({"id":"cmpl-1","choices":[{"index":0,"text":" Paris","finish_reason":null}]})");
  EXPECT_TRUE(content.has_choices);
  EXPECT_FALSE(content.completion_tokens);
  auto usage = chunk(
      R"({"choices":[],"usage":{"prompt_tokens":5,"total_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}})");
  EXPECT_FALSE(usage.has_choices);
  EXPECT_EQ(usage.prompt_tokens, 5u);
  EXPECT_EQ(usage.completion_tokens, 7u);
  EXPECT_EQ(usage.cached_tokens, 4u);
  auto null_details =
      chunk(R"({"choices":[],"usage":{"completion_tokens":7,"prompt_tokens_details":null}})");
  EXPECT_FALSE(null_details.cached_tokens);
  auto error = chunk(
      R"({"error": {"message": "boom", "type": "InternalServerError", "param": null, "code": 500}})");
  EXPECT_EQ(error.error, "boom");
  auto role = chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})");
  EXPECT_TRUE(role.has_choices);  // vLLM's client counts the chat role chunk as the first token
}

TEST(StreamChunk, RejectsNonJson) {
  EXPECT_EQ(parse_stream_chunk("hello").error().code, ErrorCode::kProtocol);
  EXPECT_EQ(parse_stream_chunk("[1,2]").error().code, ErrorCode::kProtocol);
  EXPECT_EQ(parse_stream_chunk("").error().code, ErrorCode::kProtocol);
}

TEST(RecordBuilder, MeasuresTtftItlE2eAndTpotAsVllm) {
  RecordBuilder b(3, 10.0, 100);
  const StreamChunk content = chunk(R"({"choices":[{"text":"a"}]})");
  b.on_chunk(10.5, content);  // TTFT 0.5
  b.on_chunk(10.6, content);  // ITL 0.1
  b.on_chunk(10.9, content);  // ITL 0.3
  b.on_chunk(10.95, chunk(R"({"choices":[],"usage":{"completion_tokens":5}})"));
  b.on_chunk(10.95, chunk("[DONE]"));
  RequestRecord r = b.finish(11.0, true);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.index, 3u);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.5);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.1, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(r.e2e_s, 1.0);
  EXPECT_EQ(r.output_tokens, 5u);  // usage wins over the 3 chunks
  EXPECT_EQ(r.input_tokens, 100u);
  ASSERT_TRUE(tpot_s(r).has_value());
  EXPECT_DOUBLE_EQ(*tpot_s(r), 0.5 / 4);
}

TEST(RecordBuilder, WithoutUsageCountsChunks) {
  RecordBuilder b(0, 0.0, 1);
  b.on_chunk(1.0, chunk(R"({"choices":[{"text":"a"}]})"));
  RequestRecord r = b.finish(1.0, true);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.output_tokens, 1u);
  EXPECT_FALSE(tpot_s(r).has_value());  // TPOT needs two tokens
}

TEST(RecordBuilder, ClassifiesBrokenStreams) {
  {
    RecordBuilder b(0, 0.0, 1);
    b.on_chunk(1.0, chunk(R"({"choices":[{"text":"a"}]})"));
    RequestRecord r = b.finish(2.0, false);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, ErrorKind::kMalformedStream);
  }
  {
    RecordBuilder b(0, 0.0, 1);
    b.on_chunk(1.0, chunk(R"({"error":{"message":"engine died"}})"));
    RequestRecord r = b.finish(2.0, true);
    EXPECT_EQ(r.error, ErrorKind::kServerError);
    EXPECT_EQ(r.error_message, "engine died");
  }
  {
    RecordBuilder b(0, 0.0, 1);
    RequestRecord r = b.finish(2.0, true);
    EXPECT_EQ(r.error, ErrorKind::kNoTokens);
    EXPECT_FALSE(tpot_s(r).has_value());
  }
  {
    RecordBuilder b(0, 0.0, 1);
    RequestRecord r = b.fail(2.0, ErrorKind::kHttpStatus, "HTTP 503", 503);
    EXPECT_EQ(r.http_status, 503);
    EXPECT_EQ(error_kind_name(r.error), "http_status");
  }
}

}  // namespace
}  // namespace omni::benchstat
