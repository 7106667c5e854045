// Hostile templates hit RenderLimits (or the parser's nesting bound) with a clear error, in
// bounded time and memory, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "test_util.hpp"

namespace omni::chat {
namespace {

using testing::render;

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

TEST(ChatLimitsTest, HugeLoopHitsTheStepLimit) {
  RenderLimits limits;
  limits.max_steps = 100'000;
  auto out = render("{% for i in range(1000000000) %}x{% endfor %}", "{}", limits);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, ErrorCode::kTooLarge);
  EXPECT_NE(out.error().message.find("100000 evaluation steps"), std::string::npos)
      << out.error().message;

  auto nested = render(
      "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}"
      "{% endfor %}{% endfor %}{% endfor %}",
      "{}", limits);
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, ErrorCode::kTooLarge);
}

TEST(ChatLimitsTest, ExponentialOutputHitsTheOutputLimit) {
  RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_steps = 1'000'000;  // whichever limit bites first, the render stops early
  auto doubling = render(
      "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}{{ ns.s }}",
      "{}", limits);
  ASSERT_FALSE(doubling.ok());
  EXPECT_EQ(doubling.error().code, ErrorCode::kTooLarge);
  EXPECT_NE(doubling.error().message.find("1048576 bytes"), std::string::npos)
      << doubling.error().message;

  auto macro_fanout = render(
      "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}{% else %}xxxx{% endif %}"
      "{% endmacro %}{{ m(40) }}",
      "{}", limits);
  ASSERT_FALSE(macro_fanout.ok());
  EXPECT_EQ(macro_fanout.error().code, ErrorCode::kTooLarge);

  auto plain = render("{% for i in range(100000) %}0123456789abcdef{% endfor %}", "{}", limits);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().code, ErrorCode::kTooLarge);
}

TEST(ChatLimitsTest, DeepRecursionHitsTheDepthLimit) {
  auto recursion = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(recursion.ok());
  EXPECT_EQ(recursion.error().code, ErrorCode::kTooLarge);
  EXPECT_NE(recursion.error().message.find("nesting deeper than the limit of 256"),
            std::string::npos)
      << recursion.error().message;

  RenderLimits huge_depth;
  huge_depth.max_depth = 1'000'000'000;  // capped internally to keep the native stack safe
  auto capped = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", huge_depth);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.error().code, ErrorCode::kTooLarge);
}

TEST(ChatLimitsTest, DeepSyntaxIsAParseError) {
  const std::string parens = "{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}";
  auto deep = Template::parse(parens);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("nesting deeper than"), std::string::npos)
      << deep.error().message;

  const std::string ifs = repeat("{% if true %}", 5000) + "x" + repeat("{% endif %}", 5000);
  EXPECT_FALSE(Template::parse(ifs).ok());
  const std::string nots = "{{ " + repeat("not ", 100000) + "x }}";
  EXPECT_FALSE(Template::parse(nots).ok());
  const std::string minus = "{{ " + repeat("- ", 100000) + "x }}";
  EXPECT_FALSE(Template::parse(minus).ok());

  // Moderate nesting is fine.
  const std::string ok_ifs = repeat("{% if true %}", 30) + "x" + repeat("{% endif %}", 30);
  auto ok = render(ok_ifs);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(*ok, "x");
}

TEST(ChatLimitsTest, DeeplyNestedValuesAreRefused) {
  auto lists = render(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor "
      "%}"
      "{{ ns.x }}");
  ASSERT_FALSE(lists.ok());
  EXPECT_EQ(lists.error().code, ErrorCode::kTooLarge);

  std::string deep_json;
  for (int i = 0; i < 1000; ++i) deep_json += "[";
  for (int i = 0; i < 1000; ++i) deep_json += "]";
  auto context = render("{{ x }}", R"({"x": )" + deep_json + "}");
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.error().code, ErrorCode::kTooLarge);
}

TEST(ChatLimitsTest, NamespaceCyclesAndEscapedCallersAreRefused) {
  auto cycle = render("{% set ns = namespace(a=1) %}{% set ns.self = ns %}{{ ns }}");
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.error().message.find("namespace inside a namespace"), std::string::npos);

  auto escaped = render(
      "{% set ns = namespace(c=none) %}{% macro keep() %}{% set ns.c = caller %}{% endmacro %}"
      "{% call keep() %}body{% endcall %}{{ ns.c() }}");
  ASSERT_FALSE(escaped.ok());
  EXPECT_NE(escaped.error().message.find("after its {% call %} block ended"), std::string::npos)
      << escaped.error().message;
}

TEST(ChatLimitsTest, LimitsDoNotBiteNormalTemplates) {
  RenderLimits tight;
  tight.max_steps = 10'000;
  tight.max_output_bytes = 4096;
  auto out = render(
      "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}",
      R"({"messages": [{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo"}]})",
      tight);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(*out, "<user>hi<assistant>yo");
}

}  // namespace
}  // namespace omni::chat
