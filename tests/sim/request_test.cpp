#include <gtest/gtest.h>

#include "sim/request.hpp"

namespace omni::sim {
namespace {

class RequestTest : public ::testing::Test {
 protected:
  ParsedRequest parse(std::string_view body, Endpoint e = Endpoint::kCompletions) {
    return parse_generation_request(body, e, limits_, *codec_);
  }
  ApiError error_of(std::string_view body, Endpoint e = Endpoint::kCompletions) {
    auto r = parse(body, e);
    EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
  }
  GenerationRequest ok(std::string_view body, Endpoint e = Endpoint::kCompletions) {
    auto r = parse(body, e);
    if (auto* err = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << ": " << err->message;
    return std::holds_alternative<GenerationRequest>(r) ? std::get<GenerationRequest>(r)
                                                        : GenerationRequest{};
  }
  ModelLimits limits_{{"sim-model", "alias"}, 64};
  std::unique_ptr<TextCodec> codec_ = make_builtin_codec();
};

TEST_F(RequestTest, CompletionDefaults) {
  auto r = ok(R"({"prompt":" the model"})");
  EXPECT_EQ(r.model, "sim-model");
  EXPECT_EQ(r.prompt_tokens.size(), 2u);
  EXPECT_EQ(r.max_tokens, 16u);
  EXPECT_FALSE(r.stream);
}

TEST_F(RequestTest, TokenPromptsAndAliasesAndStreamOptions) {
  auto r = ok(R"({"model":"alias","prompt":[1,2,3],"max_tokens":5,"stream":true,
                  "stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
  EXPECT_EQ(r.model, "alias");
  EXPECT_EQ(r.prompt_tokens, (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(r.max_tokens, 5u);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.continuous_usage_stats);
  EXPECT_EQ(ok(R"({"prompt":[[4,5]]})").prompt_tokens, (std::vector<std::uint32_t>{4, 5}));
}

TEST_F(RequestTest, ChatRendersMessagesAndUsesMaxCompletionTokens) {
  auto r = ok(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3,
                  "max_completion_tokens":4})",
              Endpoint::kChat);
  EXPECT_EQ(codec_->decode(r.prompt_tokens), "<|user|>\nhi\n<|assistant|>\n");
  EXPECT_EQ(r.max_tokens, 4u);
  // No limit: the rest of the context.
  auto d = ok(R"({"messages":[{"role":"user","content":"hi"}]})", Endpoint::kChat);
  EXPECT_EQ(d.max_tokens, 64u - d.prompt_tokens.size());
}

TEST_F(RequestTest, MalformedJsonIsBadRequest) {
  auto e = error_of("{\"prompt\":");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.type, "");  // the reason phrase "Bad Request"
  EXPECT_EQ(error_of("[1,2]").status, 400);
}

TEST_F(RequestTest, WrongTypesNameTheField) {
  auto e = error_of(R"({"prompt":"x","max_tokens":"ten"})");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_EQ(error_of(R"({"prompt":"x","stream":"yes"})").param, "stream");
  EXPECT_EQ(error_of(R"({"prompt":{"a":1}})").param, "prompt");
  EXPECT_EQ(error_of(R"({"messages":"hi"})", Endpoint::kChat).param, "messages");
  EXPECT_EQ(error_of(R"({"prompt":"x","temperature":"hot"})").param, "temperature");
}

TEST_F(RequestTest, MaxTokensLimits) {
  auto neg = error_of(R"({"prompt":"x","max_tokens":-1})");
  EXPECT_EQ(neg.status, 400);
  EXPECT_EQ(neg.type, "BadRequestError");
  EXPECT_EQ(neg.message, "max_tokens must be at least 1, got -1.");
  auto huge = error_of(R"({"prompt":"x","max_tokens":100000000000000000000})");
  EXPECT_EQ(huge.status, 400);
  EXPECT_NE(huge.message.find("maximum context length is 64 tokens"), std::string::npos);
  auto over = error_of(R"({"prompt":"x","max_tokens":64})");
  EXPECT_NE(over.message.find("you requested 65 tokens (1 in the messages, 64 in the completion)"),
            std::string::npos)
      << over.message;
}

TEST_F(RequestTest, PromptLongerThanContext) {
  std::string body = R"({"prompt":[)";
  for (int i = 0; i < 65; ++i) body += (i ? ",1" : "1");
  body += "]}";
  auto e = error_of(body);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "input_tokens");
  EXPECT_NE(e.message.find("your request has 65 input tokens"), std::string::npos);
}

TEST_F(RequestTest, UnknownModelIs404) {
  auto e = error_of(R"({"model":"gpt-9","prompt":"x"})");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.type, "NotFoundError");
  EXPECT_EQ(e.message, "The model `gpt-9` does not exist.");
  EXPECT_EQ(e.param, "model");
}

TEST_F(RequestTest, StreamOptionsNeedStream) {
  auto e = error_of(R"({"prompt":"x","stream_options":{"include_usage":true}})");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "stream_options");
}

TEST_F(RequestTest, EmptyPromptAndBatchesAndN) {
  EXPECT_EQ(error_of(R"({"prompt":""})").message, "Prompt cannot be empty");
  EXPECT_EQ(error_of(R"({"prompt":["a","b"]})").status, 501);
  EXPECT_EQ(ok(R"({"prompt":"x","n":3})").n, 3u);
  EXPECT_EQ(error_of(R"({"prompt":"x","n":0})").status, 400);
  EXPECT_EQ(error_of(R"({"prompt":"x","n":129})").param, "n");
  EXPECT_EQ(error_of(R"({"prompt":[-1]})").status, 400);
}

TEST_F(RequestTest, PdAndBootstrapFields) {
  auto r = ok(R"({"prompt":"x","kv_transfer_params":{"do_remote_decode":true},
                  "bootstrap_host":"10.0.0.1","bootstrap_port":8998,"bootstrap_room":42})");
  ASSERT_TRUE(r.kv_transfer_params);
  EXPECT_TRUE(r.kv_transfer_params->at("do_remote_decode").as_bool());
  ASSERT_TRUE(r.bootstrap);
  EXPECT_EQ(r.bootstrap->room, 42u);
  EXPECT_EQ(error_of(R"({"prompt":"x","kv_transfer_params":[1]})").param, "kv_transfer_params");
}

TEST_F(RequestTest, BootstrapFieldsAcceptNumericStringsAsSglang) {
  auto r =
      ok(R"({"prompt":"x","bootstrap_host":"h","bootstrap_port":" 8998","bootstrap_room":"42"})");
  ASSERT_TRUE(r.bootstrap);
  EXPECT_EQ(r.bootstrap->port, 8998);
  EXPECT_EQ(r.bootstrap->room, 42u);
  auto bad =
      error_of(R"({"prompt":"x","bootstrap_host":"h","bootstrap_port":"80a","bootstrap_room":1})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.param, "bootstrap_port");
  EXPECT_EQ(bad.message, "Input should be a valid integer, unable to parse string as an integer");
  EXPECT_EQ(error_of(R"({"prompt":"x","bootstrap_host":"h","bootstrap_room":"-3"})").param,
            "bootstrap_room");
}

TEST_F(RequestTest, StopConditions) {
  auto r = ok(R"({"prompt":"x","max_tokens":9,"stop":["a","bc"],"stop_token_ids":[7,8],
                  "ignore_eos":true,"include_stop_str_in_output":true,"min_tokens":2})");
  EXPECT_EQ(r.stop.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.stop.stop_token_ids, (std::vector<std::uint32_t>{7, 8}));
  EXPECT_TRUE(r.stop.ignore_eos);
  EXPECT_TRUE(r.stop.include_stop_str_in_output);
  EXPECT_EQ(r.stop.min_tokens, 2u);
  EXPECT_EQ(ok(R"({"prompt":"x","stop":"end"})").stop.stop, (std::vector<std::string>{"end"}));
  EXPECT_EQ(error_of(R"({"prompt":"x","stop":3})").param, "stop");
  EXPECT_EQ(error_of(R"({"prompt":"x","stop_token_ids":[-1]})").param, "stop_token_ids");
  auto min = error_of(R"({"prompt":"x","max_tokens":3,"min_tokens":4})");
  EXPECT_EQ(min.message, "min_tokens must be less than or equal to max_tokens=3, got 4.");
}

}  // namespace
}  // namespace omni::sim
