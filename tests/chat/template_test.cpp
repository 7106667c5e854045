// The interpreter's behaviour on the constructs chat templates use. Expected strings are what
// @huggingface/jinja (the reference) renders for the same template and context.
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace omni::chat {
namespace {

using testing::render;
using testing::text;

TEST(ChatTemplateWhitespaceTest, TrimBlocksAndLstripBlocksAsTransformers) {
  EXPECT_EQ(text("{% if true %}\nA\n{% endif %}\nB\n"), "A\nB");  // one trailing newline dropped
  EXPECT_EQ(text("  {% if true %}x{% endif %}"), "x");            // lstrip_blocks
  EXPECT_EQ(text("a  {{ 'b' }}  c"), "a  b  c");                  // expressions keep spaces
  EXPECT_EQ(text("{{ 'b' }}\nc"), "b\nc");                        // no trim after }}
  EXPECT_EQ(text("text only\n\n"), "text only\n");
}

TEST(ChatTemplateWhitespaceTest, DashControlsStripWhitespace) {
  EXPECT_EQ(text("x \n {{- 'a' -}} \n y"), "xay");
  EXPECT_EQ(text("x \n {%- if true -%} \n y {%- endif %}"), "xy");
  EXPECT_EQ(text("a {#- comment -#} b"), "ab");
  EXPECT_EQ(text("a {# comment #} b"), "a  b");
  EXPECT_EQ(text("a\u3000{{- 'b' }}"), "ab");  // JS whitespace includes U+3000
}

TEST(ChatTemplateExpressionTest, Arithmetic) {
  EXPECT_EQ(text("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 2 ** 10 }}"), "7|9|1024");
  EXPECT_EQ(text("{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}"), "3|-4|1|-1");
  EXPECT_EQ(text("{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 0.1 + 0.2 }}|{{ 1.5 * 2 }}"),
            "3.5|2.0|0.30000000000000004|3.0");
  EXPECT_EQ(text("{{ -x }}|{{ +x }}|{{ - -3 }}", R"({"x": 5})"), "-5|5|3");
  EXPECT_EQ(text("{{ 1 / 0 }}").substr(0, 6), "ERROR:");
}

TEST(ChatTemplateExpressionTest, StringsAndConcatenation) {
  EXPECT_EQ(text("{{ 'a' ~ 1 ~ 2.0 ~ true }}"), "a12true");  // JS toString of 2.0 is "2"
  EXPECT_EQ(text("{{ 'a' + 'b' }}|{{ 'n=' + 3 }}|{{ 3 + 'x' }}"), "ab|n=3|3x");
  EXPECT_EQ(text(R"({{ "double" }}|{{ 'it\'s' }}|{{ "tab\there" }}|{{ 'a' 'b' }})"),
            "double|it's|tab\there|ab");
  EXPECT_EQ(text(R"({{ '\u00e9\x41' }})"),
            "\xC3\xA9"
            "A");
  EXPECT_EQ(text("{{ 'hello'[1] }}|{{ 'hello'[-1] }}|{{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}"),
            "e|o|el|olleh");
  EXPECT_EQ(text("{{ 'ab' in 'cabd' }}|{{ 'x' not in 'abc' }}"), "true|true");
}

TEST(ChatTemplateExpressionTest, ValuesPrintLikeTheReference) {
  EXPECT_EQ(text("{{ true }}|{{ false }}|{{ none }}|{{ undefined_var }}|{{ 2.0 }}|{{ -0.0 }}"),
            "true|false|||2.0|-0.0");
  EXPECT_EQ(text("{{ [1, 'a', none, true] }}|{{ {'k': [1.5]} }}"),
            R"([1, "a", null, true]|{"k": [1.5]})");
  EXPECT_EQ(text("{{ x }}|{{ y }}", R"({"x": 3.0, "y": 1e21})"),
            "3|1e+21");  // JSON 3.0 is an integer
}

TEST(ChatTemplateExpressionTest, ComparisonAndLogic) {
  EXPECT_EQ(text("{{ 1 < 2 and 2 <= 2 and 3 > 2 and 3 >= 4 }}"), "false");
  EXPECT_EQ(text("{{ 1 == 1.0 }}|{{ 'a' != 'b' }}|{{ none == undefined_var }}|{{ 1 == '1' }}"),
            "true|true|true|true");
  EXPECT_EQ(text("{{ [] or 'empty' }}|{{ 'x' and 'y' }}|{{ not [] }}|{{ not 'a' }}"),
            "empty|y|true|false");
  EXPECT_EQ(text("{{ 'yes' if 0 else 'no' }}|{{ 'a' if true }}|{{ 'b' if false }}|"), "no|a||");
  EXPECT_EQ(text("{{ 2 in [1, 2.0] }}|{{ 'k' in {'k': 1} }}|{{ 'z' in missing }}"),
            "true|true|false");
}

TEST(ChatTemplateExpressionTest, IndexingAndDicts) {
  const char* ctx =
      R"({"m": {"role": "user", "content": "hi", "n": {"x": [10, 20]}}, "xs": [1, 2, 3]})";
  EXPECT_EQ(
      text("{{ m.role }}|{{ m['content'] }}|{{ m.n.x[1] }}|{{ m.missing }}|{{ m.missing.deeper }}",
           ctx),
      "user|hi|20||");
  EXPECT_EQ(
      text("{{ xs[0] }}|{{ xs[-1] }}|{{ xs[5] }}|{{ xs[1:] }}|{{ xs[:-1] }}|{{ xs[::2] }}", ctx),
      "1|3||[2, 3]|[1, 2]|[1, 3]");
  EXPECT_EQ(text("{{ m.get('role') }}|{{ m.get('nope', 'dflt') }}|{{ m.get('nope') }}", ctx),
            "user|dflt|");
  EXPECT_EQ(text("{% for k in m.keys() %}{{ k }},{% endfor %}|{{ m.values() | length }}", ctx),
            "role,content,n,|3");
  EXPECT_EQ(text("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
  EXPECT_EQ(text(R"({{ {"b": 1, "2": 2, "1": 3} }})"), R"({"b": 1, "2": 2, "1": 3})");
  EXPECT_EQ(text("{{ d }}", R"({"d": {"b": 1, "2": 2, "1": 3}})"),
            R"({"1": 3, "2": 2, "b": 1})");  // JS key order
}

TEST(ChatTemplateLoopTest, LoopVariables) {
  EXPECT_EQ(text("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ x }}{% if not loop.last %},{% "
                 "endif %}{% endfor %}"),
            "1a,2b,3c");
  EXPECT_EQ(text("{% for x in 'ab' | list if true %}{% endfor %}").substr(0, 6),
            "ERROR:");  // list of a string
  EXPECT_EQ(text("{% for x in [1, 2, 3] %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ "
                 "loop.length }} "
                 "{% endfor %}"),
            "03true3 12false3 21false3 ");
  EXPECT_EQ(text("{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}"),
            "-2 1-3 2- ");
  EXPECT_EQ(text("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(text("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{% endfor %}"), "24");
  EXPECT_EQ(text("{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}"), "ab");
}

TEST(ChatTemplateLoopTest, BreakAndContinueDropTheCutIteration) {
  EXPECT_EQ(text("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "012");
  EXPECT_EQ(
      text("{% for i in range(4) %}{{ i }}{% if i is odd %}{% continue %}{% endif %};{% endfor %}"),
      "0;2;");
  EXPECT_EQ(text("{% break %}").substr(0, 6), "ERROR:");
}

TEST(ChatTemplateScopeTest, SetInLoopsIsLocalNamespacesAreShared) {
  EXPECT_EQ(text("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"),
            "21");
  EXPECT_EQ(text("{% set ns = namespace(x=1, y='a') %}{% for i in [1, 2] %}{% set ns.x = ns.x + i "
                 "%}{% endfor %}"
                 "{{ ns.x }}{{ ns.y }}"),
            "4a");
  EXPECT_EQ(text("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
  EXPECT_EQ(text("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(text("{% set block %}  in {{ 'side' }}  {% endset %}[{{ block | trim }}]"),
            "[in side]");
  EXPECT_EQ(text("{% set m = {'a': 1} %}{% set m.a = 2 %}").substr(0, 6), "ERROR:");
}

TEST(ChatTemplateFilterTest, CommonFilters) {
  const char* ctx = R"({"xs": [3, 1, 2], "s": "  Hello World  ", "names": ["b", "A", "c"]})";
  EXPECT_EQ(text("{{ s | trim }}|{{ s | length }}|{{ xs | length }}|{{ s | upper | trim }}", ctx),
            "Hello World|15|3|HELLO WORLD");
  EXPECT_EQ(text("{{ xs | first }}{{ xs | last }}|{{ xs | join }}|{{ xs | join(', ') }}|{{ 'abc' | "
                 "join('-') }}",
                 ctx),
            "32|312|3, 1, 2|a-b-c");
  EXPECT_EQ(
      text("{{ xs | sort }}|{{ names | sort }}|{{ xs | reverse | list }}|{{ [1, 1, 2] | unique }}",
           ctx),
      R"([1, 2, 3]|["A", "b", "c"]|[2, 1, 3]|[1, 2])");
  EXPECT_EQ(
      text("{{ missing | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}"),
      "d||d");
  EXPECT_EQ(text("{{ '42' | int + 1 }}|{{ 'x' | int }}|{{ 3.7 | int }}|{{ '2.5' | float }}|{{ 5 | "
                 "string ~ '!' }}"),
            "43|0|3|2.5|5!");
  EXPECT_EQ(
      text("{{ 'a-b-a' | replace('a', 'x') }}|{{ 'hello world' | title }}|{{ 'hi' | capitalize }}"),
      "x-b-x|Hello World|Hi");
  EXPECT_EQ(text("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}"),
            "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(text("{{ {'b': 2, 'a': 1} | dictsort }}|{{ {'a': 1} | items }}"),
            R"([["a", 1], ["b", 2]]|[["a", 1]])");
}

TEST(ChatTemplateFilterTest, ToJson) {
  const char* ctx =
      R"({"t": {"name": "f", "args": {"q": "\"x\"\n", "n": 1.5, "ok": true, "none": null, "l": [1, 2]}}})";
  EXPECT_EQ(
      text("{{ t | tojson }}", ctx),
      R"({"name": "f", "args": {"q": "\"x\"\n", "n": 1.5, "ok": true, "none": null, "l": [1, 2]}})");
  EXPECT_EQ(text("{{ t.args.l | tojson(indent=2) }}", ctx), "[\n  1,\n  2\n]");
  EXPECT_EQ(text("{{ {'b': 1, 'a': 'é'} | tojson(sort_keys=true, ensure_ascii=true) }}"),
            R"({"a": "\u00e9", "b": 1})");
  EXPECT_EQ(text("{{ [1, {'a': 2}] | tojson(separators=(',', ':')) }}"), R"([1,{"a":2}])");
  EXPECT_EQ(text("{{ {} | tojson(indent=4) }}|{{ 'x\u0001' | tojson }}"), R"({}|"x\u0001")");
}

TEST(ChatTemplateFilterTest, SelectRejectAndMap) {
  const char* ctx =
      R"({"ms": [{"role": "system", "c": 1}, {"role": "user", "c": 2}, {"role": "user"}]})";
  EXPECT_EQ(text("{{ ms | selectattr('role', 'equalto', 'user') | list | length }}", ctx), "2");
  EXPECT_EQ(
      text("{{ ms | rejectattr('role', 'equalto', 'user') | map(attribute='c') | list }}", ctx),
      "[1]");
  EXPECT_EQ(text("{{ ms | selectattr('c') | map(attribute='role') | join(',') }}", ctx),
            "system,user");
  EXPECT_EQ(text("{{ ms | selectattr('c', 'defined') | length }}", ctx), "2");
  EXPECT_EQ(text("{{ ms | map(attribute='c', default=0) | list }}", ctx), "[1, 2, 0]");
}

TEST(ChatTemplateTestsTest, IsTests) {
  const char* ctx =
      R"({"s": "x", "n": 1, "f": 1.5, "l": [1], "d": {"a": 1}, "z": null, "b": true})";
  EXPECT_EQ(
      text(
          "{{ s is string }}{{ n is number }}{{ f is number }}{{ n is integer }}{{ f is integer }}",
          ctx),
      "truetruetruetruefalse");
  EXPECT_EQ(text("{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ s is iterable }}{{ d "
                 "is iterable }}",
                 ctx),
            "truefalsetruetruefalse");
  EXPECT_EQ(text("{{ l is sequence }}{{ z is none }}{{ z is not none }}{{ q is defined }}{{ q is "
                 "undefined }}",
                 ctx),
            "truetruefalsefalsetrue");
  EXPECT_EQ(
      text("{{ b is boolean }}{{ b is true }}{{ b is false }}{{ n is odd }}{{ 'ab' is lower }}",
           ctx),
      "truetruefalsetruetrue");
  EXPECT_EQ(text("{{ n is prime }}", ctx).substr(0, 6), "ERROR:");
}

TEST(ChatTemplateMethodTest, StringMethods) {
  EXPECT_EQ(text("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', "
                 "'a')) }}"),
            "truetruetrue");
  EXPECT_EQ(text("{{ 'a,b,,c'.split(',') }}|{{ '  a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}"),
            R"(["a", "b", "", "c"]|["a", "b"]|["a", "b c"])");
  EXPECT_EQ(text("[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}]"),
            "[x][x  ][  x]");
  // As in the reference, strip's argument is ignored: all whitespace goes.
  EXPECT_EQ(text("[{{ '\n x \n'.strip('\n') }}]"), "[x]");
  EXPECT_EQ(text("{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}|{{ "
                 "'ab'.length }}"),
            "bba|HIhi|2");
  EXPECT_EQ(text("{{ 'x'.nope() }}").substr(0, 6), "ERROR:");
  EXPECT_EQ(
      text("{{ c.split('</think>')[-1].lstrip('\n') }}", R"({"c": "<think>r</think>\n\nanswer"})"),
      "answer");
}

TEST(ChatTemplateMacroTest, MacrosAndCallBlocks) {
  EXPECT_EQ(text("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                 "{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}"),
            "Hi A! Hi B? Hi C.");
  EXPECT_EQ(
      text("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}"),
      "<inner>");
  EXPECT_EQ(
      text("{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, k=3) }}"),
      R"(1[2]{"k": 3})");
  EXPECT_EQ(text("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").substr(0, 6), "ERROR:");
}

TEST(ChatTemplateMiscTest, FilterBlockRangeAndRaise) {
  EXPECT_EQ(text("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
  EXPECT_EQ(text("{{ range(3) }}|{{ range(1, 7, 2) }}|{{ range(3, 0, -1) }}"),
            "[0, 1, 2]|[1, 3, 5]|[3, 2, 1]");
  auto raised =
      render("line one\n{{ raise_exception('Bad role: ' + role) }}", R"({"role": "robot"})");
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(raised.error().message, "line 2: raise_exception: Bad role: robot");
}

TEST(ChatTemplateMiscTest, StrftimeNowReadsTheInjectedTime) {
  auto tmpl = Template::parse(
      "{% if strftime_now is defined %}{{ strftime_now('%d %b %Y|%Y-%m-%d %H:%M|%B|%%') }}{% else "
      "%}fallback{% endif %}");
  ASSERT_TRUE(tmpl.ok());
  const boost::json::object context;
  auto without = tmpl->render(context);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(*without, "fallback");
  const std::pair<std::int64_t, const char*> cases[] = {
      {0, "01 Jan 1970|1970-01-01 00:00|January|%"},
      {951844020, "29 Feb 2000|2000-02-29 17:07|February|%"},
      {1764510120, "30 Nov 2025|2025-11-30 13:42|November|%"},
      {-86400, "31 Dec 1969|1969-12-31 00:00|December|%"},
  };
  for (const auto& [now, expected] : cases) {
    auto out = tmpl->render(context, RenderLimits{}, now);
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_EQ(*out, expected) << now;
  }
}

TEST(ChatTemplateErrorTest, ParseErrorsNameLineAndConstruct) {
  auto expect_parse_error = [](std::string_view source, std::string_view expected) {
    auto tmpl = Template::parse(source);
    ASSERT_FALSE(tmpl.ok()) << source;
    EXPECT_EQ(tmpl.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(tmpl.error().message, expected) << source;
  };
  expect_parse_error("a\nb\n{% include 'x.j2' %}", "line 3: unsupported statement {% include %}");
  expect_parse_error("{% if x %}\nno end", "line 2: {% if %} opened on line 1 is never closed");
  expect_parse_error("{% for x in xs %}{% endif %}",
                     "line 1: unexpected {% endif %} without a matching opening statement");
  expect_parse_error("\n{{ 'unterminated }}", "line 2: string literal is never closed");
  expect_parse_error("{# never closed", "line 1: comment '{#' is never closed with '#}'");
  expect_parse_error("{{ x is divisibleby(3) }}",
                     "line 1: unsupported: test with arguments ('is divisibleby(...)')");
  expect_parse_error("{{ a ; b }}", "line 1: unexpected character ';'");
  expect_parse_error("{% for x in xs recursive %}{% endfor %}",
                     "line 1: unsupported: recursive loops");
  expect_parse_error("{{ 1 + }}", "line 1: unexpected '}}' in an expression");
}

TEST(ChatTemplateErrorTest, RenderErrorsNameLineAndConstruct) {
  auto expect_render_error = [](std::string_view source, std::string_view expected) {
    auto out = render(source, R"({"xs": [1], "d": {"a": 1}})");
    ASSERT_FALSE(out.ok()) << source;
    EXPECT_EQ(out.error().message, expected) << source;
  };
  expect_render_error("\n\n{{ xs | shuffle }}", "line 3: unsupported filter 'shuffle' on a array");
  expect_render_error(
      "{{ d.nope() }}",
      "line 1: cannot call method 'nope': it is undefined (unknown function or method)");
  expect_render_error("{{ d ~ 'x' }}",
                      "line 1: cannot concatenate a object to a string (use tojson)");
  expect_render_error("{{ none + 1 }}", "line 1: unsupported operator '+' on none");
  expect_render_error("{{ 'a' < 'b' }}",
                      "line 1: unsupported operator '<' between string and string");
  expect_render_error("{% for x in 5 %}{% endfor %}", "line 1: cannot loop over a integer");
}

}  // namespace
}  // namespace omni::chat
