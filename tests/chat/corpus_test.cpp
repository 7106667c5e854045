// Replays the fuzz corpus (fuzz/chat_template/corpus) the way the fuzz target runs it: each
// input is a template, optionally followed by "\n---\n" and a JSON context. Files named ok_*
// must render, err_* must fail with an error (hostile templates among them); every result is
// deterministic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <boost/json.hpp>

#include "omni/chat/template.hpp"

#include "support/corpus.hpp"

namespace omni::chat {
namespace {

constexpr std::string_view kDefaultContext = R"({
  "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
  "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": " hi "},
               {"role": "assistant", "content": null, "tool_calls": [
                 {"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
               {"role": "tool", "content": "42"}],
  "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})";

Result<std::string> run(std::string_view input) {
  const std::size_t split = input.find("\n---\n");
  const std::string_view context_text =
      split == std::string_view::npos ? kDefaultContext : input.substr(split + 5);
  const auto context = boost::json::parse(context_text).as_object();
  auto tmpl = Template::parse(input.substr(0, split));
  if (!tmpl.ok()) return std::move(tmpl).error();
  RenderLimits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1 << 20;
  limits.max_depth = 64;
  auto first = tmpl->render(context, limits);
  auto second = tmpl->render(context, limits);
  EXPECT_EQ(first.ok(), second.ok());
  if (first.ok() && second.ok()) {
    EXPECT_EQ(*first, *second);
  }
  return first;
}

TEST(ChatTemplateCorpusTest, EveryInputRendersOrFailsAsNamed) {
  const std::filesystem::path dir = OMNI_CHAT_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::size_t ok_files = 0;
  std::size_t err_files = 0;
  for (const auto& [path, input] : omni::test_support::read_corpus(dir)) {
    const std::string name = path.filename().string();
    auto result = run(input);
    if (name.rfind("ok_", 0) == 0) {
      ++ok_files;
      EXPECT_TRUE(result.ok()) << name << ": " << result.error().to_string();
      if (result.ok()) {
        EXPECT_FALSE(result->empty()) << name;
      }
    } else if (name.rfind("err_", 0) == 0) {
      ++err_files;
      EXPECT_FALSE(result.ok()) << name << " rendered: " << result->substr(0, 200);
      if (!result.ok()) {
        EXPECT_EQ(result.error().message.rfind("line ", 0), 0u)
            << name << ": " << result.error().message;
      }
    }
    // Other names are inputs the fuzzer found: they only must not crash.
  }
  EXPECT_GE(ok_files, 5u);
  EXPECT_GE(err_files, 5u);
}

}  // namespace
}  // namespace omni::chat
