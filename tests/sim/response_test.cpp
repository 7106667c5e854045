#include <gtest/gtest.h>

#include "sim/response.hpp"

namespace omni::sim {
namespace {

ResponseContext ctx(Endpoint e) {
  return {e, e == Endpoint::kChat ? "chatcmpl-r1" : "cmpl-r1", 1767225600, "m",
          "vllm-0.20.0-abcd1234"};
}

TEST(Response, CompletionBodyMatchesVllmFieldOrder) {
  std::string body =
      format_response(ctx(Endpoint::kCompletions), " Paris.", "length", {5, 7}, {}, "null");
  EXPECT_EQ(
      body,
      R"({"id":"cmpl-r1","object":"text_completion","created":1767225600,"model":"m",)"
      R"("choices":[{"index":0,"text":" Paris.","logprobs":null,"finish_reason":"length",)"
      R"("stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}],)"
      R"("service_tier":null,"system_fingerprint":"vllm-0.20.0-abcd1234",)"
      R"("usage":{"prompt_tokens":5,"total_tokens":12,"completion_tokens":7,)"
      R"("prompt_tokens_details":null},"kv_transfer_params":null})");
}

TEST(Response, ChatBodyMatchesVllmFieldOrder) {
  std::string body = format_response(ctx(Endpoint::kChat), "Hello!", "stop", {9, 2}, {}, "null");
  EXPECT_EQ(
      body,
      R"({"id":"chatcmpl-r1","object":"chat.completion","created":1767225600,"model":"m",)"
      R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null,)"
      R"("annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},)"
      R"("logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}],)"
      R"("service_tier":null,"system_fingerprint":"vllm-0.20.0-abcd1234",)"
      R"("usage":{"prompt_tokens":9,"total_tokens":11,"completion_tokens":2,)"
      R"("prompt_tokens_details":null},"prompt_logprobs":null,"prompt_token_ids":null,)"
      R"("prompt_text":null,"kv_transfer_params":null})");
}

TEST(Response, StreamChunks) {
  auto c = ctx(Endpoint::kChat);
  EXPECT_EQ(
      format_role_chunk(c, std::nullopt),
      R"({"id":"chatcmpl-r1","object":"chat.completion.chunk","created":1767225600,"model":"m",)"
      R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
      R"("finish_reason":null}],"prompt_token_ids":null,"prompt_text":null})");
  EXPECT_EQ(
      format_chunk(c, "", "stop", std::nullopt, {}, true),
      R"({"id":"chatcmpl-r1","object":"chat.completion.chunk","created":1767225600,"model":"m",)"
      R"("choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop",)"
      R"("stop_reason":null,"token_ids":null}],"system_fingerprint":"vllm-0.20.0-abcd1234"})");
  EXPECT_EQ(format_usage_chunk(ctx(Endpoint::kCompletions), {5, 2}),
            R"({"id":"cmpl-r1","object":"text_completion","created":1767225600,"model":"m",)"
            R"("choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2},)"
            R"("system_fingerprint":"vllm-0.20.0-abcd1234"})");
  EXPECT_EQ(format_chunk(ctx(Endpoint::kCompletions), " a\"b", "", Usage{3, 1}, {}, false),
            R"({"id":"cmpl-r1","object":"text_completion","created":1767225600,"model":"m",)"
            R"("choices":[{"index":0,"text":" a\"b","logprobs":null,"finish_reason":null,)"
            R"("stop_reason":null,"prompt_token_ids":null,"token_ids":null}],)"
            R"("usage":{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1}})");
}

TEST(Response, TokenIdsWhenAsked) {
  std::vector<std::uint32_t> p{1, 2}, o{3};
  std::string body =
      format_response(ctx(Endpoint::kCompletions), "x", "length", {2, 1}, {p, o, true}, "null");
  EXPECT_NE(body.find(R"("token_ids":[3],"prompt_logprobs":null,"prompt_token_ids":[1,2])"),
            std::string::npos);
}

TEST(Response, SeveralChoicesStopReasonsAndCachedTokens) {
  const Choice choices[] = {{0, "a", "stop", "\"END\"", {}}, {1, "b", "length", "null", {}}};
  std::string body =
      format_response(ctx(Endpoint::kCompletions), choices, Usage{5, 7, 3}, {}, "null");
  EXPECT_NE(body.find(R"("choices":[{"index":0,"text":"a","logprobs":null,"finish_reason":"stop",)"
                      R"("stop_reason":"END",)"),
            std::string::npos)
      << body;
  EXPECT_NE(
      body.find(
          R"({"index":1,"text":"b","logprobs":null,"finish_reason":"length","stop_reason":null,)"),
      std::string::npos)
      << body;
  EXPECT_NE(body.find(R"("usage":{"prompt_tokens":5,"total_tokens":12,"completion_tokens":7,)"
                      R"("prompt_tokens_details":{"cached_tokens":3}})"),
            std::string::npos);
  EXPECT_EQ(
      format_usage_chunk(ctx(Endpoint::kCompletions), Usage{5, 2, 4}),
      R"({"id":"cmpl-r1","object":"text_completion","created":1767225600,"model":"m",)"
      R"("choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2,)"
      R"("prompt_tokens_details":{"cached_tokens":4}},"system_fingerprint":"vllm-0.20.0-abcd1234"})");
  const Choice last{2, "", "stop", "42", {}};
  EXPECT_EQ(
      format_chunk(ctx(Endpoint::kChat), last, std::nullopt, {}, false),
      R"({"id":"chatcmpl-r1","object":"chat.completion.chunk","created":1767225600,"model":"m",)"
      R"("choices":[{"index":2,"delta":{"content":""},"logprobs":null,"finish_reason":"stop",)"
      R"("stop_reason":42,"token_ids":null}]})");
  EXPECT_NE(
      format_role_chunk(ctx(Endpoint::kChat), std::nullopt, 1).find(R"("choices":[{"index":1,)"),
      std::string::npos);
}

TEST(Response, StreamErrorUsesPythonSpacing) {
  EXPECT_EQ(
      format_stream_error("boom", "InternalServerError", 500),
      R"({"error": {"message": "boom", "type": "InternalServerError", "param": null, "code": 500}})");
}

}  // namespace
}  // namespace omni::sim
