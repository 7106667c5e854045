// omni-sim renders chat requests with the model's chat template, as vLLM does: small templates
// on the built-in codec (always run), and the real DeepSeek-V3 and Qwen3 tokenizers and
// templates from .tools/ (skipped with a reason when absent), where a chat request's prompt
// must be exactly the ids of what `omni-tokenize chat` renders, tokenized without a second BOS.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "omni/chat/template.hpp"
#include "omni/tokenizer/tokenizer.hpp"
#include "sim/chat_codec.hpp"
#include "sim/request.hpp"
#include "sim/tokenizer_codec.hpp"

namespace omni::sim {
namespace {

namespace json = boost::json;

// Roles in brackets, the generation prompt as "[assistant]", and a tool list when given.
constexpr std::string_view kToyConfig = R"({
  "bos_token": "<s>",
  "chat_template": "{{ bos_token }}{% if tools %}(tools:{{ tools | length }}){% endif %}{% for m in messages %}{% if m.role == 'robot' %}{{ raise_exception('Bad role: robot') }}{% endif %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
})";

class ChatTemplateTest : public ::testing::Test {
 protected:
  std::variant<GenerationRequest, ApiError> parse(std::string_view body) {
    return parse_generation_request(body, Endpoint::kChat, limits_, *codec_);
  }
  std::string prompt_of(std::string_view body) {
    auto r = parse(body);
    if (auto* e = std::get_if<ApiError>(&r)) {
      ADD_FAILURE() << body << ": " << e->message;
      return {};
    }
    return codec_->decode(std::get<GenerationRequest>(r).prompt_tokens);
  }
  ApiError error_of(std::string_view body) {
    auto r = parse(body);
    EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
  }
  ModelLimits limits_{{"m"}, 4096};
  std::unique_ptr<TextCodec> codec_ = with_chat_templates(make_builtin_codec(), kToyConfig);
};

TEST_F(ChatTemplateTest, RendersTheModelTemplateWithBosAndGenerationPrompt) {
  EXPECT_TRUE(has_model_chat_template(*codec_));
  EXPECT_EQ(
      prompt_of(
          R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]})"),
      "<s>[system]be brief[user]hi[assistant]");
  EXPECT_EQ(
      prompt_of(R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false})"),
      "<s>[user]hi");
  // Text content parts are joined as vLLM does for text-only templates.
  EXPECT_EQ(
      prompt_of(
          R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]})"),
      "<s>[user]a\nb[assistant]");
}

TEST_F(ChatTemplateTest, ToolsAndNamedTemplatesReachTheTemplate) {
  EXPECT_EQ(
      prompt_of(
          R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]})"),
      "<s>(tools:1)[user]hi[assistant]");
  codec_ = with_chat_templates(make_builtin_codec(), R"({"chat_template":[
      {"name":"default","template":"D{{ messages[0].content }}"},
      {"name":"tool_use","template":"T{{ messages[0].content }}"}]})");
  EXPECT_EQ(prompt_of(R"({"messages":[{"role":"user","content":"x"}]})"), "Dx");
  EXPECT_EQ(prompt_of(R"({"messages":[{"role":"user","content":"x"}],"tools":[]})"), "Tx");
}

TEST_F(ChatTemplateTest, TemplateErrorsAreVllmBadRequests) {
  ApiError e = error_of(R"({"messages":[{"role":"robot","content":"x"}]})");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.type, "BadRequestError");
  EXPECT_NE(e.message.find("Bad role: robot"), std::string::npos) << e.message;
  // A model template that does not parse fails each chat request, not the server's start.
  codec_ =
      with_chat_templates(make_builtin_codec(), R"({"chat_template":"{% for m in messages %}"})");
  EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}]})").type, "BadRequestError");
}

TEST_F(ChatTemplateTest, RequestTemplateAndContinueFinalMessage) {
  EXPECT_EQ(
      prompt_of(
          R"({"messages":[{"role":"user","content":"x"}],"chat_template":"<{{ messages[0].content }}>"})"),
      "<x>");
  EXPECT_EQ(error_of(R"({"messages":[{"role":"user","content":"x"}],"chat_template":5})").param,
            "chat_template");
  // The rendered text stops right after the final message, so the model continues it.
  EXPECT_EQ(
      prompt_of(
          R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"The answer is"}],
                          "add_generation_prompt":false,"continue_final_message":true,
                          "chat_template":"{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"})"),
      "<user>q</user><assistant>The answer is");
  ApiError both =
      error_of(R"({"messages":[{"role":"user","content":"q"}],"add_generation_prompt":true,
                               "continue_final_message":true})");
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(both.type, "");  // vLLM's request validator
  EXPECT_EQ(
      error_of(R"({"messages":[{"role":"user","content":"q"}],"continue_final_message":true})")
          .type,
      "BadRequestError");  // transformers refuses the default generation prompt with it
}

TEST_F(ChatTemplateTest, WithoutATemplateTheBuiltInRoleTemplateServes) {
  codec_ = with_chat_templates(make_builtin_codec(), "{}");
  EXPECT_FALSE(has_model_chat_template(*codec_));
  EXPECT_EQ(prompt_of(R"({"messages":[{"role":"user","content":"hi"}]})"),
            "<|user|>\nhi\n<|assistant|>\n");
  EXPECT_EQ(
      prompt_of(R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false})"),
      "<|user|>\nhi\n");
}

TEST_F(ChatTemplateTest, TokenizeChatFormMatchesTheChatRoute) {
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}]})";
  auto tokens = chat_prompt_tokens(json::parse(body).as_object(), *codec_);
  ASSERT_TRUE(std::holds_alternative<std::vector<std::uint32_t>>(tokens));
  EXPECT_EQ(std::get<std::vector<std::uint32_t>>(tokens),
            std::get<GenerationRequest>(parse(body)).prompt_tokens);
}

TEST_F(ChatTemplateTest, CompletionsWithAnExplicitNullMaxTokensGetTheRestOfTheContext) {
  // vLLM's CompletionRequest defaults max_tokens to 16, but null means "no limit" (the context).
  auto absent =
      parse_generation_request(R"({"prompt":[1,2,3]})", Endpoint::kCompletions, limits_, *codec_);
  auto null = parse_generation_request(R"({"prompt":[1,2,3],"max_tokens":null})",
                                       Endpoint::kCompletions, limits_, *codec_);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(absent) &&
              std::holds_alternative<GenerationRequest>(null));
  EXPECT_EQ(std::get<GenerationRequest>(absent).max_tokens, 16u);
  EXPECT_EQ(std::get<GenerationRequest>(null).max_tokens, 4096u - 3u);
}

// --- the real models -----------------------------------------------------------------------

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RealTemplateTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::string(OMNI_TOKENIZER_MODELS_DIR) + "/tokenizer-" + GetParam() + "/models";
    if (!std::filesystem::exists(dir_ + "/tokenizer.json")) {
      GTEST_SKIP() << dir_
                   << " is missing: run scripts/install-deps.sh to fetch the reference tokenizers";
    }
    auto codec = load_tokenizer_codec(dir_);
    ASSERT_TRUE(codec.ok()) << codec.error().to_string();
    codec_ = std::move(*codec);
    auto tok = tokenizer::Tokenizer::load(dir_);
    ASSERT_TRUE(tok.ok());
    tok_ = *tok;
  }
  // What `omni-tokenize chat` does: render_chat with the config, then encode the text without
  // special tokens (vLLM's chat path: add_special_tokens=False, the template wrote the BOS).
  std::vector<std::uint32_t> reference_ids(const std::string& request,
                                           bool generation_prompt = true) {
    chat::ChatOptions options;
    options.add_generation_prompt = generation_prompt;
    auto config = json::parse(read_file(dir_ + "/tokenizer_config.json")).as_object();
    auto text = chat::render_chat(json::parse(request).as_object(), config, options);
    EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message);
    auto ids = tok_->encode(text.ok() ? *text : "", tokenizer::EncodeOptions{false});
    EXPECT_TRUE(ids.ok());
    return ids.ok() ? std::vector<std::uint32_t>(ids->begin(), ids->end())
                    : std::vector<std::uint32_t>{};
  }
  std::vector<std::uint32_t> sim_ids(const std::string& request) {
    auto r = parse_generation_request(request, Endpoint::kChat, limits_, *codec_);
    if (auto* e = std::get_if<ApiError>(&r)) {
      ADD_FAILURE() << e->message;
      return {};
    }
    return std::get<GenerationRequest>(r).prompt_tokens;
  }
  std::string dir_;
  std::unique_ptr<TextCodec> codec_;
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  ModelLimits limits_{{"m"}, 1u << 17};
};

TEST_P(RealTemplateTest, PromptIdsAreThoseOfTheRenderedTemplate) {
  EXPECT_TRUE(has_model_chat_template(*codec_));
  const std::vector<std::string> requests = {
      R"({"messages":[{"role":"user","content":"Hello, who are you?"}]})",
      R"({"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"2+2?"},
                      {"role":"assistant","content":"4"},{"role":"user","content":"And 3+3? 你好"}],"max_tokens":5})",
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"part one"},{"type":"text","text":"part two"}]}]})",
  };
  for (const std::string& request : requests) {
    const auto expected = reference_ids(request);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(sim_ids(request), expected) << request;
  }
  const std::string no_prompt =
      R"({"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":false})";
  EXPECT_EQ(sim_ids(no_prompt), reference_ids(no_prompt, false));
}

TEST_P(RealTemplateTest, TheTemplatesBosIsTheOnlyBos) {
  const auto ids = sim_ids(R"({"messages":[{"role":"user","content":"Hi"}]})");
  ASSERT_FALSE(ids.empty());
  const auto bos = tok_->bos_id();
  if (GetParam() == "deepseek_v3") {
    ASSERT_TRUE(bos.has_value());
    EXPECT_EQ(ids.front(), *bos);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), *bos), 1);
  }
  if (bos) {
    EXPECT_LE(std::count(ids.begin(), ids.end(), *bos), 1);
  }
  // The chat template's special tokens are single ids, not their spelled-out text.
  const auto marker = tok_->token_to_id(GetParam() == "qwen3" ? "<|im_start|>" : "<｜User｜>");
  ASSERT_TRUE(marker.has_value());
  EXPECT_NE(std::find(ids.begin(), ids.end(), *marker), ids.end());
}

INSTANTIATE_TEST_SUITE_P(Models, RealTemplateTest, ::testing::Values("deepseek_v3", "qwen3"));

}  // namespace
}  // namespace omni::sim
