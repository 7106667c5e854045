// inspect_request scans a body with Boost.JSON's tokenizer instead of building a DOM. This test
// keeps the DOM implementation it replaced as the reference and checks that both give the same
// verdict, the same error (message and param) and the same fields on the fuzz corpus, on
// mutations of it, and on hand-written edge cases (duplicates, escaped keys, nesting, numbers).
// scan_object's validity is checked against boost::json::parse the same way.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "omni/proxy/rewrite.hpp"

#include "support/corpus.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

// ---- the DOM reference (the implementation before the scanning one) -------------------------

std::uint64_t text_tokens(std::size_t bytes) { return bytes == 0 ? 0 : (bytes + 3) / 4; }

std::uint64_t prompt_tokens_of(const json::value& prompt) {
  if (prompt.is_string()) return text_tokens(prompt.get_string().size());
  if (prompt.is_int64() || prompt.is_uint64()) return 1;
  if (!prompt.is_array()) return 0;
  std::uint64_t total = 0;
  for (const json::value& item : prompt.get_array()) total += prompt_tokens_of(item);
  return total;
}

std::uint64_t message_tokens(const json::array& messages) {
  std::uint64_t total = 0;
  for (const json::value& message : messages) {
    if (!message.is_object()) continue;
    const json::value* content = message.get_object().if_contains("content");
    if (!content) continue;
    if (content->is_string()) {
      total += text_tokens(content->get_string().size());
    } else if (content->is_array()) {
      for (const json::value& part : content->get_array()) {
        if (!part.is_object()) continue;
        if (const json::value* text = part.get_object().if_contains("text");
            text && text->is_string()) {
          total += text_tokens(text->get_string().size());
        }
      }
    }
  }
  return total;
}

std::optional<std::uint64_t> non_negative_int(const json::value* value) {
  if (!value) return std::nullopt;
  if (value->is_uint64()) return value->get_uint64();
  if (value->is_int64() && value->get_int64() >= 0)
    return static_cast<std::uint64_t>(value->get_int64());
  return std::nullopt;
}

struct Verdict {
  bool ok = false;
  std::string message;  // error message, or empty
  std::string param;
  RequestInfo info;
};

Verdict reference_inspect(std::string_view body, Api api, std::size_t max_depth = 64) {
  Verdict v;
  auto fail = [&v](std::string message, std::string param) {
    v.message = std::move(message);
    v.param = std::move(param);
    return v;
  };
  json::parse_options options;
  options.max_depth = max_depth;
  boost::system::error_code ec;
  json::value parsed = json::parse(body, ec, {}, options);
  if (ec) return fail("invalid JSON: " + ec.message(), "");
  if (!parsed.is_object()) return fail("the request body must be a JSON object", "");
  const json::object& object = parsed.get_object();
  RequestInfo& info = v.info;
  if (const json::value* stream = object.if_contains("stream"); stream && !stream->is_null()) {
    if (!stream->is_bool()) return fail("'stream' must be a boolean", "stream");
    info.stream = stream->get_bool();
  }
  if (const json::value* options_value = object.if_contains("stream_options");
      options_value && options_value->is_object()) {
    const json::value* usage = options_value->get_object().if_contains("include_usage");
    info.include_usage = usage && usage->is_bool() && usage->get_bool();
  }
  if (const json::value* model = object.if_contains("model"); model && !model->is_null()) {
    if (!model->is_string()) return fail("'model' must be a string", "model");
    info.model = std::string(model->get_string());
  }
  if (api == Api::kCompletions) {
    const json::value* prompt = object.if_contains("prompt");
    if (!prompt || prompt->is_null()) return fail("'prompt' is required", "prompt");
    info.prompt_tokens = prompt_tokens_of(*prompt);
    info.max_tokens = 16;
  } else {
    const json::value* messages = object.if_contains("messages");
    if (!messages || !messages->is_array())
      return fail("'messages' must be a list of messages", "messages");
    info.prompt_tokens = message_tokens(messages->get_array());
    info.max_tokens = 512;
  }
  if (auto limit = non_negative_int(object.if_contains("max_tokens"))) info.max_tokens = *limit;
  if (auto limit = non_negative_int(object.if_contains("max_completion_tokens")))
    info.max_tokens = *limit;
  if (const json::value* priority = object.if_contains("priority");
      priority && !priority->is_null()) {
    const bool fits = (priority->is_int64() && priority->get_int64() >= INT32_MIN &&
                       priority->get_int64() <= INT32_MAX) ||
                      (priority->is_uint64() && priority->get_uint64() <= INT32_MAX);
    if (!fits) return fail("'priority' must be an integer in -2147483648..2147483647", "priority");
    info.priority = priority->is_int64() ? priority->get_int64()
                                         : static_cast<std::int64_t>(priority->get_uint64());
  }
  v.ok = true;
  return v;
}

Verdict scanned_inspect(std::string_view body, Api api) {
  Verdict v;
  BadRequest bad;
  auto info = inspect_request(body, api, &bad);
  v.ok = info.ok();
  if (info.ok()) {
    v.info = *info;
  } else {
    v.message = bad.message;
    v.param = bad.param;
  }
  return v;
}

// ---- comparison ------------------------------------------------------------------------------

std::string differences(std::string_view body) {
  std::string out;
  for (const Api api : {Api::kCompletions, Api::kChatCompletions}) {
    const Verdict want = reference_inspect(body, api);
    const Verdict got = scanned_inspect(body, api);
    const char* name = api == Api::kCompletions ? "completions" : "chat";
    if (want.ok != got.ok || want.message != got.message || want.param != got.param) {
      out += std::string(name) + ": verdict '" + want.message + "' vs '" + got.message + "'; ";
      continue;
    }
    if (!want.ok) continue;  // same refusal: the fields are not part of the answer
    const RequestInfo& a = want.info;
    const RequestInfo& b = got.info;
    if (a.stream != b.stream || a.include_usage != b.include_usage || a.model != b.model ||
        a.prompt_tokens != b.prompt_tokens || a.max_tokens != b.max_tokens ||
        a.priority != b.priority) {
      out += std::string(name) + ": fields differ (stream " + std::to_string(a.stream) + " vs " +
             std::to_string(b.stream) + ", include_usage " + std::to_string(a.include_usage) +
             " vs " + std::to_string(b.include_usage) + ", prompt_tokens " +
             std::to_string(a.prompt_tokens) + " vs " + std::to_string(b.prompt_tokens) +
             ", max_tokens " + std::to_string(a.max_tokens) + " vs " +
             std::to_string(b.max_tokens) + ", model '" + a.model + "' vs '" + b.model + "'); ";
    }
  }
  boost::system::error_code ec;
  json::parse_options deep;
  deep.max_depth = 256;
  const json::value dom = json::parse(body, ec, {}, deep);
  const bool dom_object = !ec && dom.is_object();
  if (dom_object != scan_object(body).ok())
    out += "scan_object disagrees with boost::json::parse; ";
  return out;
}

std::vector<std::string> corpus() {
  std::vector<std::string> inputs;
  for (auto& file : omni::test_support::read_corpus(OMNI_PROXY_REWRITE_CORPUS_DIR)) {
    inputs.push_back(std::move(file.bytes));
  }
  return inputs;
}

TEST(ProxyInspectDifferential, HandWrittenEdgeCasesMatchTheDomReference) {
  const std::vector<std::string> cases = {
      R"({"prompt":"abcd","stream":true,"stream":1})",
      R"({"prompt":"abcd","stream":1,"stream":false})",
      R"({"prompt":"abcd","stream":null})",
      R"({"\u0073tream":true,"pro\u006dpt":"abcdefgh","mod\u0065l":"a\u00e9\ud83d\ude00b"})",
      R"({"prompt":"x","model":"a","model":"bb\nc"})",
      R"({"prompt":"x","model":"a","model":null})",
      R"({"prompt":"x","model":"a","model":["b"]})",
      R"({"prompt":[[1,-2,3.0,"abcde",[4,[5,{"x":[6]}]]],true,null,18446744073709551615,18446744073709551616]})",
      R"({"prompt":{"a":1},"max_tokens":-1})",
      R"({"prompt":"a","priority":-5})",
      R"({"prompt":"a","priority":2147483648})",
      R"({"prompt":"a","priority":-2147483648,"priority":null})",
      R"({"prompt":"a","priority":"1"})",
      R"({"prompt":"a","priority":1.0,"priority":3})",
      R"({"prompt":"a","priority":-9223372036854775809})",
      R"({"prompt":"a","priority":18446744073709551615})",
      R"({"prompt":"a","prompt":null})",
      R"({"prompt":null,"prompt":"abcdefghi"})",
      R"({"prompt":1e400})",
      R"({"prompt":"a","max_tokens":3,"max_tokens":-3})",
      R"({"prompt":"a","max_tokens":3.0,"max_completion_tokens":9223372036854775808})",
      R"({"prompt":"a","max_completion_tokens":5,"max_completion_tokens":"7","max_tokens":4})",
      R"({"prompt":"a","stream_options":{"include_usage":true},"stream_options":5})",
      R"({"prompt":"a","stream_options":{"include_usage":true,"include_usage":1}})",
      R"({"prompt":"a","stream_options":{"x":{"include_usage":true}}})",
      R"({"prompt":"a","stream_options":{"include_usage":false,"include_usage":true}})",
      R"({"messages":[{"content":"12345","content":[{"text":"1234","text":"123456789"},{"text":7},"x",[{"text":"abc"}]]},{"content":{"text":"zzzz"}},5,[{"content":"qq"}]]})",
      R"({"messages":[{"content":"1234"}],"messages":[{"content":"12345678"}]})",
      R"({"messages":[{"content":"1234"}],"messages":{}})",
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x","text":"no"}}]}]})",
      R"({"x":{"prompt":"nested is not top level","messages":[]},"prompt":"ab"})",
      R"([{"prompt":"a"}])",
      R"("prompt")",
      R"({"prompt":"a"} )",
      R"({"prompt":"a"} x)",
      R"({"prompt":"a",})",
      R"({"prompt":"a" /* c */})",
      "{\"prompt\":\"\xff\"}",
      "{\"prompt\":\"a\x01\"}",
      R"({"prompt":"\ud800"})",
      R"({"prompt":"a","model":"\uZZZZ"})",
      R"({"prompt":01})",
      R"({"prompt":-0,"max_tokens":0})",
      R"({})",
      "",
      "   ",
      R"({"prompt":"a")",
  };
  for (const std::string& body : cases) EXPECT_EQ(differences(body), "") << body;
  // Depth limits: 64 is inspect_request's default, 256 scan_object's.
  for (const int depth : {62, 63, 64, 65, 255, 256, 257}) {
    std::string body = R"({"prompt":"a","x":)" +
                       std::string(static_cast<std::size_t>(depth - 1), '[') +
                       std::string(static_cast<std::size_t>(depth - 1), ']') + "}";
    EXPECT_EQ(differences(body), "") << "depth " << depth;
  }
}

TEST(ProxyInspectDifferential, CorpusAndItsMutationsMatchTheDomReference) {
  const std::vector<std::string> inputs = corpus();
  ASSERT_GT(inputs.size(), 5u);
  std::mt19937_64 random(12345);  // fixed seed: the same mutations every run
  std::size_t checked = 0;
  for (const std::string& input : inputs) {
    EXPECT_EQ(differences(input), "") << input;
    ++checked;
    for (std::size_t cut = 0; cut < input.size(); cut += 1 + input.size() / 16) {
      const std::string_view prefix(input.data(), cut);
      EXPECT_EQ(differences(prefix), "") << prefix;
      ++checked;
    }
    static const char kBytes[] = "{}[]\":,\\ 0-1e.tfnu\x80";
    for (int i = 0; i < 40 && !input.empty(); ++i) {
      std::string mutated = input;
      const int edits = 1 + static_cast<int>(random() % 3);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = random() % mutated.size();
        const char byte = kBytes[random() % (sizeof(kBytes) - 1)];
        switch (random() % 3) {
          case 0: mutated[at] = byte; break;
          case 1: mutated.insert(mutated.begin() + static_cast<std::ptrdiff_t>(at), byte); break;
          default: mutated.erase(at, 1); break;
        }
        if (mutated.empty()) mutated = "{";
      }
      EXPECT_EQ(differences(mutated), "") << mutated;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000u);
}

}  // namespace
}  // namespace omni::proxy
