#include "omni/proxy/rewrite.hpp"

#include <gtest/gtest.h>

namespace omni::proxy {
namespace {

TEST(ProxyInspectRequest, ReadsStreamModelAndLimits) {
  auto info = inspect_request(
      R"({"model":"m","prompt":"abcdefgh","stream":true,"stream_options":{"include_usage":true},"max_tokens":7})",
      Api::kCompletions);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_TRUE(info->stream);
  EXPECT_TRUE(info->include_usage);
  EXPECT_EQ(info->model, "m");
  EXPECT_EQ(info->prompt_tokens, 2u);  // 8 bytes of text, 4 per token
  EXPECT_EQ(info->max_tokens, 7u);
  EXPECT_TRUE(info->text_prompt);
}

TEST(ProxyInspectRequest, CountsTokenIdsAndChatContent) {
  auto ids = inspect_request(R"({"prompt":[[1,2,3],[4,5]]})", Api::kCompletions);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->prompt_tokens, 5u);
  EXPECT_EQ(ids->max_tokens, 16u);  // vLLM's default
  EXPECT_FALSE(ids->text_prompt);   // token ids: the proxy may hash them
  auto chat = inspect_request(
      R"({"messages":[{"role":"user","content":"12345678"},{"role":"user","content":[{"type":"text","text":"1234"}]}],"max_completion_tokens":3,"max_tokens":9})",
      Api::kChatCompletions);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->prompt_tokens, 3u);
  EXPECT_EQ(chat->max_tokens, 3u);  // max_completion_tokens wins
  EXPECT_FALSE(chat->text_prompt);
}

TEST(ProxyInspectRequest, RejectsWithTheOffendingField) {
  BadRequest bad;
  EXPECT_FALSE(inspect_request("[1,2]", Api::kCompletions, &bad).ok());
  EXPECT_EQ(bad.param, "");
  EXPECT_FALSE(inspect_request(R"({"model":"m"})", Api::kCompletions, &bad).ok());
  EXPECT_EQ(bad.param, "prompt");
  EXPECT_FALSE(inspect_request(R"({"messages":"hi"})", Api::kChatCompletions, &bad).ok());
  EXPECT_EQ(bad.param, "messages");
  EXPECT_FALSE(inspect_request(R"({"prompt":"x","stream":"yes"})", Api::kCompletions, &bad).ok());
  EXPECT_EQ(bad.param, "stream");
  EXPECT_FALSE(inspect_request(R"({"prompt":"x",)", Api::kCompletions, &bad).ok());
  EXPECT_NE(bad.message.find("invalid JSON"), std::string::npos);
}

TEST(ProxyInspectRequest, BoundsNesting) {
  std::string deep =
      R"({"prompt":"x","extra":)" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_FALSE(inspect_request(deep, Api::kCompletions).ok());
  EXPECT_TRUE(inspect_request(deep, Api::kCompletions, nullptr, InspectLimits{200}).ok());
}

TEST(ProxyScanObject, FindsTopLevelMembersWithRawValues) {
  auto members =
      scan_object(R"( { "a" : 0.70 , "b":{"c":[1,"}"]}, "s\u0074ream":true,"d":"x\"y" } )");
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[0].key, "a");
  EXPECT_EQ((*members)[0].value, "0.70");
  EXPECT_EQ((*members)[1].value, R"({"c":[1,"}"]})");
  EXPECT_EQ((*members)[2].key, "stream");  // escapes in keys are decoded
  EXPECT_EQ((*members)[3].value, R"("x\"y")");
  EXPECT_FALSE(scan_object("[]").ok());
  EXPECT_FALSE(scan_object(R"({"a":1} x)").ok());
}

TEST(ProxyPrefillBody, FollowsTheNixlConnectorRecipe) {
  const std::string body =
      R"({"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true},)"
      R"("max_tokens":50,"min_tokens":5,"temperature":0.70,"unknown_field":{"keep":[1,2]}})";
  auto prefill = prefill_body(body);
  ASSERT_TRUE(prefill.ok());
  EXPECT_EQ(*prefill,
            R"({"model":"m","prompt":"hi","stream":false,"max_tokens":1,"temperature":0.70,)"
            R"("unknown_field":{"keep":[1,2]},"kv_transfer_params":{"do_remote_decode":true,)"
            R"("do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,)"
            R"("remote_host":null,"remote_port":null}})");
}

TEST(ProxyPrefillBody, SetsMaxCompletionTokensOnlyWhenPresentAndDropsDuplicates) {
  auto prefill =
      prefill_body(R"({"messages":[],"max_completion_tokens":9,"stream":true,"stream":true})");
  ASSERT_TRUE(prefill.ok());
  EXPECT_EQ(
      *prefill,
      R"({"messages":[],"max_completion_tokens":1,"stream":false,"max_tokens":1,)"
      R"("kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,)"
      R"("remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}})");
}

TEST(ProxyDecodeBody, ReplacesKvTransferParamsVerbatim) {
  const std::string params = R"({"do_remote_prefill": true, "remote_block_ids": [[12, 13]]})";
  auto decode =
      decode_body(R"({"prompt":"hi","stream":true,"kv_transfer_params":null,"n":1})", params);
  ASSERT_TRUE(decode.ok());
  EXPECT_EQ(*decode,
            R"({"prompt":"hi","stream":true,"kv_transfer_params":)" + params + R"(,"n":1})");
}

TEST(ProxyKvTransferParamsOf, TakesOnlyANonEmptyObject) {
  auto some = kv_transfer_params_of(R"({"id":"x","kv_transfer_params":{ "remote_host" : "h" }})");
  ASSERT_TRUE(some.ok());
  ASSERT_TRUE(some->has_value());
  EXPECT_EQ(**some, R"({ "remote_host" : "h" })");
  for (const char* body : {R"({"kv_transfer_params":null})", R"({"kv_transfer_params":{ }})",
                           R"({"kv_transfer_params":[1]})", R"({"id":"x"})"}) {
    auto none = kv_transfer_params_of(body);
    ASSERT_TRUE(none.ok()) << body;
    EXPECT_FALSE(none->has_value()) << body;
  }
  EXPECT_FALSE(kv_transfer_params_of("not json").ok());
}

TEST(ProxyBootstrapBody, AddsTheThreeFields) {
  auto body = bootstrap_body(R"({"prompt":"p","bootstrap_room":1})", Bootstrap{"[::1]", 8998, 42});
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*body,
            R"({"prompt":"p","bootstrap_room":42,"bootstrap_host":"[::1]","bootstrap_port":8998})");
}

TEST(ProxyJsonQuote, EscapesControlAndQuotes) {
  EXPECT_EQ(json_quote("a\"b\\c\n"), R"("a\"b\\c\n")");
}

}  // namespace
}  // namespace omni::proxy
