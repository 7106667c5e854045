// Chat → completions conversion (include/omni/proxy/chat_convert.hpp): the request mapping and
// its refusals, the stream and body conversion compared byte for byte with what omni-sim's own
// chat route formats for the same output (and with vLLM's wire examples), and the fuzz corpus
// replay. With the real DeepSeek-V3 / Qwen3 files (.tools/) and omni_sim, the whole round trip:
// omni-sim's completions route given the converted body sees the prompt its chat route sees.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "chat_convert_fuzz_checks.hpp"
#include "omni/proxy/chat_convert.hpp"
#include "omni/proxy/rewrite.hpp"
#include "sim/request.hpp"
#include "sim/response.hpp"
#if OMNI_CHAT_CONVERT_WITH_SIM
#include "sim/tokenizer_codec.hpp"

#include "support/corpus.hpp"
#endif

namespace omni::proxy {
namespace {

using fuzz::toy_template;
using fuzz::toy_tokenizer;

ChatAsCompletion convert(std::string_view body) {
  auto r = chat_to_completion(body, toy_tokenizer(), toy_template());
  EXPECT_TRUE(r.ok()) << body;
  return r.ok() ? *r : ChatAsCompletion{NotConvertible{"error", {}}};
}

ChatConversion converted(std::string_view body) {
  ChatAsCompletion r = convert(body);
  if (auto* no = std::get_if<NotConvertible>(&r)) {
    ADD_FAILURE() << body << ": not convertible: " << no->reason << " " << no->detail;
    return {};
  }
  return std::get<ChatConversion>(r);
}

std::string reason_of(std::string_view body) {
  ChatAsCompletion r = convert(body);
  return std::holds_alternative<NotConvertible>(r) ? std::get<NotConvertible>(r).reason
                                                   : "converted";
}

std::string toy_ids(std::string_view text) {
  std::string out = "[";
  for (char c : text) out += (out.size() > 1 ? "," : "") + std::to_string(static_cast<int>(c));
  return out + "]";
}

TEST(ChatToCompletion, MessagesBecomeTokenIdsAndEveryOtherMemberIsCopiedAsWritten) {
  const ChatConversion c = converted(
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.70,"x_unknown":{"a" : 1},)"
      R"("max_completion_tokens":5,"max_tokens":9,"stream":true,"stream_options":{"include_usage":true},)"
      R"("add_generation_prompt":true,"chat_template_kwargs":{"enable_thinking":false},"logprobs":false,"seed":3})");
  EXPECT_EQ(c.completion_body,
            R"({"model":"m","prompt":)" + toy_ids("<user>hi<assistant>") +
                R"(,"temperature":0.70,"x_unknown":{"a" : 1},"max_tokens":5,"stream":true,)"
                R"("stream_options":{"include_usage":true},"seed":3})");
  EXPECT_EQ(c.prompt_tokens, std::string_view("<user>hi<assistant>").size());
  EXPECT_TRUE(c.stream);
  EXPECT_TRUE(c.include_usage);
  EXPECT_FALSE(c.continuous_usage_stats);
}

TEST(ChatToCompletion, TheChatDefaultLimitIsAnExplicitNull) {
  // Without a limit chat generates to the end of the context; completions would stop at 16.
  EXPECT_EQ(converted(R"({"messages":[{"role":"user","content":"a"}]})").completion_body,
            R"({"prompt":)" + toy_ids("<user>a<assistant>") + R"(,"max_tokens":null})");
  EXPECT_EQ(
      converted(
          R"({"messages":[{"role":"user","content":"a"}],"max_tokens":4,"max_completion_tokens":null})")
          .completion_body,
      R"({"prompt":)" + toy_ids("<user>a<assistant>") + R"(,"max_tokens":4})");
  EXPECT_EQ(
      converted(
          R"({"messages":[{"role":"user","content":"a"}],"add_generation_prompt":false,"prompt":"x"})")
          .completion_body,
      R"({"prompt":)" + toy_ids("<user>a") + R"(,"max_tokens":null})");
}

TEST(ChatToCompletion, WhatCannotStayExactIsForwardedAsChat) {
  const std::string m = R"("messages":[{"role":"user","content":"a"}])";
  EXPECT_EQ(reason_of("{" + m + R"(,"tools":[{"type":"function","function":{"name":"f"}}]})"),
            "tools");
  EXPECT_EQ(reason_of("{" + m + R"(,"tool_choice":"auto"})"), "tool_choice");
  EXPECT_EQ(reason_of("{" + m + R"(,"response_format":{"type":"json_object"}})"),
            "response_format");
  EXPECT_EQ(reason_of("{" + m + R"(,"logprobs":true})"), "logprobs");
  EXPECT_EQ(reason_of("{" + m + R"(,"top_logprobs":2})"), "logprobs");
  EXPECT_EQ(reason_of("{" + m + R"(,"n":2})"), "n");
  EXPECT_EQ(reason_of("{" + m + R"(,"echo":true})"), "echo");
  EXPECT_EQ(reason_of("{" + m + R"(,"return_token_ids":true})"), "return_token_ids");
  EXPECT_EQ(reason_of("{" + m + R"(,"continue_final_message":true,"add_generation_prompt":false})"),
            "continue_final_message");
  EXPECT_EQ(reason_of("{" + m + R"(,"chat_template":"{{ 1 }}"})"), "chat_template");
  EXPECT_EQ(reason_of("{" + m + R"(,"max_tokens":0})"), "max_tokens");
  EXPECT_EQ(reason_of("{" + m + R"(,"stream":"yes"})"), "field_type");
  EXPECT_EQ(reason_of("{" + m + "," + m + "}"), "duplicate_key");
  EXPECT_EQ(reason_of(R"({"messages":"hi"})"), "messages");
  EXPECT_EQ(reason_of(R"({"model":"m"})"), "messages");
  EXPECT_EQ(reason_of(R"({"messages":[{"role":"robot","content":"a"}]})"), "template_error");
  // Harmless spellings of "nothing" are converted.
  EXPECT_EQ(
      reason_of(
          "{" + m +
          R"(,"tool_choice":"none","response_format":{"type":"text"},"logprobs":false,"top_logprobs":0,"n":1,"tools":null})"),
      "converted");
  // Not an object at all: the proxy's own validation should have refused it.
  EXPECT_FALSE(chat_to_completion("[1]", toy_tokenizer(), toy_template()).ok());
  EXPECT_FALSE(chat_to_completion("{", toy_tokenizer(), toy_template()).ok());
}

// --- the answer, compared with omni-sim's own chat route -----------------------------------

sim::ResponseContext sim_context(sim::Endpoint e) {
  return {e, e == sim::Endpoint::kChat ? "chatcmpl-r1" : "cmpl-r1", 1767225600, "m",
          "vllm-0.20.0-abcd1234"};
}

struct SimStream {
  std::vector<std::string> completions;  // what omni-sim's completions route sends
  std::vector<std::string> chat;         // what its chat route sends for the same output
};

// Two content steps then the finish, as generate.cpp emits them, for both routes.
SimStream sim_stream(bool include_usage, bool continuous) {
  const auto comp = sim_context(sim::Endpoint::kCompletions);
  const auto chat = sim_context(sim::Endpoint::kChat);
  auto usage_at = [&](std::uint32_t n) {
    return continuous ? std::optional<sim::Usage>(sim::Usage{9, n}) : std::nullopt;
  };
  SimStream s;
  s.chat.push_back(sim::format_role_chunk(chat, usage_at(0)));
  const std::vector<std::pair<std::string, std::uint32_t>> steps = {
      {" the", 1}, {" model \"q\"\n", 3}, {"", 4}};
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const bool last = i + 1 == steps.size();
    const std::string finish = last ? "length" : "";
    const bool fingerprint = last && !include_usage;
    for (auto* ctx : {&comp, &chat}) {
      auto& out = ctx == &comp ? s.completions : s.chat;
      out.push_back(sim::format_chunk(*ctx, steps[i].first, finish, usage_at(steps[i].second), {},
                                      fingerprint));
    }
  }
  if (include_usage) {
    s.completions.push_back(sim::format_usage_chunk(comp, sim::Usage{9, 4}));
    s.chat.push_back(sim::format_usage_chunk(chat, sim::Usage{9, 4}));
  }
  s.completions.push_back("[DONE]");
  s.chat.push_back("[DONE]");
  return s;
}

std::vector<std::string> run_converter(const std::vector<std::string>& events,
                                       const ChatConversion& c) {
  ChatStreamConverter converter(c);
  std::vector<std::string> out;
  for (const std::string& e : events) {
    auto converted = converter.convert(e);
    EXPECT_TRUE(converted.ok()) << e;
    if (converted.ok()) out.insert(out.end(), converted->begin(), converted->end());
  }
  return out;
}

TEST(ChatStream, IdenticalToOmniSimsChatRoute) {
  for (bool include_usage : {false, true}) {
    for (bool continuous : {false, true}) {
      if (continuous && !include_usage) continue;
      SCOPED_TRACE(std::to_string(include_usage) + std::to_string(continuous));
      ChatConversion c;
      c.prompt_tokens = 9;
      c.stream = true;
      c.include_usage = include_usage;
      c.continuous_usage_stats = continuous;
      const SimStream s = sim_stream(include_usage, continuous);
      EXPECT_EQ(run_converter(s.completions, c), s.chat);
    }
  }
}

TEST(ChatStream, MatchesVllmsWireExamples) {
  // vLLM's completions chunk → its chat chunks (docs: vllm_wire_protocol.md §3.5).
  ChatConversion c;
  const std::vector<std::string> out = run_converter(
      {R"({"id":"cmpl-x","object":"text_completion","created":1767225600,"model":"m","choices":[{"index":0,"text":"Hi","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]})",
       R"({"id":"cmpl-x","object":"text_completion","created":1767225600,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"stop","stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"system_fingerprint":"vllm-<version>-<hash8>"})"},
      c);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(
      out[0],
      R"({"id":"chatcmpl-x","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null})");
  EXPECT_EQ(
      out[1],
      R"({"id":"chatcmpl-x","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null,"token_ids":null}]})");
  EXPECT_EQ(
      out[2],
      R"({"id":"chatcmpl-x","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}],"system_fingerprint":"vllm-<version>-<hash8>"})");
}

TEST(ChatStream, ErrorsPassThroughAndGarbageIsAProtocolError) {
  ChatConversion c;
  ChatStreamConverter converter(c);
  const std::string error = sim::format_stream_error("boom", "InternalServerError", 500);
  auto passed = converter.convert(error);
  ASSERT_TRUE(passed.ok());
  EXPECT_EQ(*passed, std::vector<std::string>{error});  // no role chunk before an error
  EXPECT_EQ(stream_error_payload("boom"), error);
  for (std::string_view bad :
       {"not json", "{\"object\":\"chat.completion.chunk\",\"choices\":[]}",
        R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0}]})",
        R"({"id":"cmpl-1","object":"text_completion","choices":{}})"}) {
    auto r = converter.convert(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kProtocol);
  }
}

TEST(ChatStream, TextIsCopiedAsTheEngineEscapedIt) {
  // Brackets, commas and escaped quotes inside strings must not cut the choices apart, and
  // the engine's escapes (\u00e9, \/) reach the client unchanged.
  ChatConversion c;
  ChatStreamConverter converter(c);
  auto out = converter.convert(
      R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[ {"index":0,"text":"a\"],}\u00e9\/","finish_reason":null} , )"
      R"({"index":1,"text":"[{","finish_reason":"stop","stop_reason":13} ]})");
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 3u);  // a role chunk per choice, then the content
  EXPECT_EQ(
      (*out)[1],
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":1,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null})");
  EXPECT_EQ(
      (*out)[2],
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[)"
      R"({"index":0,"delta":{"content":"a\"],}\u00e9\/"},"logprobs":null,"finish_reason":null,"token_ids":null},)"
      R"({"index":1,"delta":{"content":"[{"},"logprobs":null,"finish_reason":"stop","stop_reason":13,"token_ids":null}]})");
}

TEST(ChatResponse, IdenticalToOmniSimsChatBody) {
  const std::vector<std::uint32_t> none;
  const sim::TokenIds ids{none, none, false};
  const std::string kv = R"({"do_remote_prefill":true,"remote_block_ids":[[1,2]]})";
  const std::string completion = sim::format_response(
      sim_context(sim::Endpoint::kCompletions), " the \u00e9", "length", sim::Usage{9, 4}, ids, kv);
  auto chat = completion_to_chat_response(completion);
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_EQ(*chat, sim::format_response(sim_context(sim::Endpoint::kChat), " the \u00e9", "length",
                                        sim::Usage{9, 4}, ids, kv));
  EXPECT_FALSE(completion_to_chat_response(R"({"error":{"message":"x"}})").ok());
}

TEST(ChatConvertCorpus, EveryInputConvertsOrFailsCleanly) {
  const std::filesystem::path dir = OMNI_PROXY_CHAT_CONVERT_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::size_t files = 0;
  for (const auto& [path, input] : omni::test_support::read_corpus(dir)) {
    ++files;
    const std::string failure = fuzz::check_chat_convert(input);
    EXPECT_TRUE(failure.empty()) << path << ": " << failure;
  }
  EXPECT_GT(files, 5u);
}

// --- the real models, through omni-sim's request parser --------------------------------------

class RealModelConvert : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::string(OMNI_TOKENIZER_MODELS_DIR) + "/tokenizer-" + GetParam() + "/models";
    if (!std::filesystem::exists(dir_ + "/tokenizer.json")) {
      GTEST_SKIP() << dir_
                   << " is missing: run scripts/install-deps.sh to fetch the reference tokenizers";
    }
    auto tok = tokenizer::Tokenizer::load(dir_);
    ASSERT_TRUE(tok.ok()) << tok.error().to_string();
    tok_ = *tok;
    auto tmpl = load_chat_template(*tok_);
    ASSERT_TRUE(tmpl.ok()) << tmpl.error().to_string();
    tmpl_ = *tmpl;
  }
  std::string dir_;
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  ChatPromptTemplate tmpl_;
};

TEST_P(RealModelConvert, TheEngineSeesThePromptOfItsOwnChatRoute) {
#if OMNI_CHAT_CONVERT_WITH_SIM
  auto codec = sim::load_tokenizer_codec(dir_);
  ASSERT_TRUE(codec.ok());
  const sim::ModelLimits limits{{"m"}, 1u << 17};
  const std::string body =
      R"({"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hello 你好, 2+2?"}],)"
      R"("stream":true,"stream_options":{"include_usage":true}})";
  auto as_chat = sim::parse_generation_request(body, sim::Endpoint::kChat, limits, **codec);
  ASSERT_TRUE(std::holds_alternative<sim::GenerationRequest>(as_chat));
  auto conversion = chat_to_completion(body, *tok_, tmpl_);
  ASSERT_TRUE(conversion.ok() && std::holds_alternative<ChatConversion>(*conversion));
  const ChatConversion& c = std::get<ChatConversion>(*conversion);
  auto as_completion = sim::parse_generation_request(c.completion_body, sim::Endpoint::kCompletions,
                                                     limits, **codec);
  ASSERT_TRUE(std::holds_alternative<sim::GenerationRequest>(as_completion));
  const auto& chat_req = std::get<sim::GenerationRequest>(as_chat);
  const auto& comp_req = std::get<sim::GenerationRequest>(as_completion);
  EXPECT_EQ(comp_req.prompt_tokens, chat_req.prompt_tokens);
  EXPECT_EQ(c.prompt_tokens, chat_req.prompt_tokens.size());
  EXPECT_EQ(comp_req.max_tokens, chat_req.max_tokens);  // the rest of the context in both
  EXPECT_EQ(comp_req.stream, chat_req.stream);
  EXPECT_EQ(comp_req.include_usage, chat_req.include_usage);
#else
  GTEST_SKIP() << "built without omni_sim";
#endif
}

TEST_P(RealModelConvert, PromptIdsAreTheRenderedTemplateWithOneBos) {
  auto conversion =
      chat_to_completion(R"({"messages":[{"role":"user","content":"Hi"}]})", *tok_, tmpl_);
  ASSERT_TRUE(conversion.ok() && std::holds_alternative<ChatConversion>(*conversion));
  auto rendered = chat::render_chat(
      boost::json::parse(R"({"messages":[{"role":"user","content":"Hi"}]})").as_object(),
      tmpl_.tokenizer_config, {});
  ASSERT_TRUE(rendered.ok());
  auto ids = tok_->encode(*rendered);
  ASSERT_TRUE(ids.ok());
  std::string expected = "[";
  for (auto id : *ids) expected += (expected.size() > 1 ? "," : "") + std::to_string(id);
  expected += "]";
  EXPECT_EQ(std::get<ChatConversion>(*conversion).completion_body,
            R"({"prompt":)" + expected + R"(,"max_tokens":null})");
  if (auto bos = tok_->bos_id(); bos && GetParam() == "deepseek_v3") {
    EXPECT_EQ(ids->front(), *bos);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, RealModelConvert, ::testing::Values("deepseek_v3", "qwen3"));

}  // namespace
}  // namespace omni::proxy
