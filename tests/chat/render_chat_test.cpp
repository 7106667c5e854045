// render_chat: the template context built from an OpenAI chat request and a
// tokenizer_config.json, checked on our Llama-3-style template (tests/chat/data).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <boost/json.hpp>

#include "omni/chat/template.hpp"

namespace omni::chat {
namespace {

ChatOptions with_generation_prompt(bool on) {
  ChatOptions options;
  options.add_generation_prompt = on;
  return options;
}

boost::json::object llama_config() {
  std::ifstream in(std::string(OMNI_SOURCE_DIR) + "/tests/chat/data/llama3_tokenizer_config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return boost::json::parse(ss.str()).as_object();
}

boost::json::object request(std::string_view json) { return boost::json::parse(json).as_object(); }

constexpr std::string_view kHeader =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";

TEST(ChatRenderChatTest, LlamaStyleConversation) {
  const auto config = llama_config();
  const auto req = request(R"({"model": "m", "messages": [
      {"role": "system", "content": "  Be terse.  "},
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello."},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]})");
  auto with_prompt = render_chat(req, config, with_generation_prompt(true));
  ASSERT_TRUE(with_prompt.ok()) << with_prompt.error().to_string();
  const std::string body = std::string(kHeader) +
                           "Be terse.<|eot_id|>"
                           "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                           "<|start_header_id|>user<|end_header_id|>\n\na\nb<|eot_id|>";
  EXPECT_EQ(*with_prompt, body + "<|start_header_id|>assistant<|end_header_id|>\n\n");

  auto without = render_chat(req, config, with_generation_prompt(false));
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(*without, body);
}

TEST(ChatRenderChatTest, ToolCallAndResult) {
  const auto req = request(R"({"messages": [
      {"role": "user", "content": "Time?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "now", "arguments": {"tz": "UTC"}}}]},
      {"role": "tool", "tool_call_id": "c", "content": "12:00"}]})");
  auto out = render_chat(req, llama_config(), with_generation_prompt(false));
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(*out, std::string(kHeader) +
                      "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTime?<|eot_id|>"
                      "<|start_header_id|>assistant<|end_header_id|>\n\n"
                      R"({"name": "now", "parameters": {"tz": "UTC"}})"
                      "<|eom_id|><|start_header_id|>ipython<|end_header_id|>\n\n12:00<|eot_id|>");
}

TEST(ChatRenderChatTest, TemplateErrorsAreReported) {
  // Two tool calls: the template raises, and the error names the line of raise_exception.
  const auto req = request(R"({"messages": [{"role": "user", "content": "x"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"type": "function", "function": {"name": "a", "arguments": "{}"}},
        {"type": "function", "function": {"name": "b", "arguments": "{}"}}]}]})");
  auto out = render_chat(req, llama_config(), ChatOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(out.error().message.find(
                "raise_exception: This model only supports single tool-calls at once!"),
            std::string::npos)
      << out.error().message;
  EXPECT_EQ(out.error().message.rfind("line ", 0), 0u) << out.error().message;
}

TEST(ChatRenderChatTest, ContextFromConfigAndRequest) {
  auto tmpl = Template::parse(
      "{{ bos_token }}|{{ eos_token }}|{{ pad_token is defined }}|{{ add_generation_prompt }}|"
      "{{ tools | length }}|{{ enable_thinking }}|{{ messages | length }}");
  ASSERT_TRUE(tmpl.ok());
  const auto config =
      request(R"({"bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>",
                                  "pad_token": null, "model_max_length": 10})");
  const auto req =
      request(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}],
                               "chat_template_kwargs": {"enable_thinking": false}})");
  auto out = render_chat(*tmpl, req, config, with_generation_prompt(true));
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(*out, "<s>|</s>|false|true|1|false|1");
}

TEST(ChatRenderChatTest, BadRequestsAndConfigs) {
  const auto config = llama_config();
  EXPECT_EQ(render_chat(request(R"({"prompt": "x"})"), config, {}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(render_chat(request(R"({"messages": [1]})"), config, {}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(render_chat(
                request(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
                config, {})
                .error()
                .code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(render_chat(request(R"({"messages": []})"), request("{}"), {}).error().code,
            ErrorCode::kNotFound);
}

TEST(ChatRenderChatTest, NamedTemplateListPicksToolUseWhenToolsAreGiven) {
  const auto config = request(R"({"chat_template": [{"name": "default", "template": "plain"},
                                                    {"name": "tool_use", "template": "tools"}]})");
  auto plain = render_chat(request(R"({"messages": []})"), config, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "plain");
  auto tools = render_chat(request(R"({"messages": [], "tools": []})"), config, {});
  ASSERT_TRUE(tools.ok());
  EXPECT_EQ(*tools, "tools");
}

}  // namespace
}  // namespace omni::chat
