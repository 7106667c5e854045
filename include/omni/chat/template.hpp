// Chat templates: a Jinja2-subset interpreter for the `chat_template` of Hugging Face
// tokenizer configs (DeepSeek-V3, Qwen3, Llama-3 style), byte-identical to @huggingface/jinja.
//
// Template::parse lexes and parses once into an immutable AST; render() walks it over a JSON
// context. Both are pure (no I/O, no clock) and bounded: a malicious template hits
// RenderLimits (steps, output bytes, nesting depth) and fails with an error, never hangs or
// crashes. Anything outside the supported subset (docs/chat-template.md) is a parse or render
// error naming the line and the construct, never silently wrong output.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "omni/common/result.hpp"

namespace omni::chat {

struct RenderLimits {
  std::size_t max_output_bytes = 16u << 20;  // the rendered text, and any intermediate string
  std::size_t max_steps = 10'000'000;        // evaluation steps (expressions, loop iterations)
  std::size_t max_depth = 256;               // nesting of evaluation (macros, expressions)
};

namespace detail {
struct ChatTemplateProgram;  // the parsed AST (src/chat/ast.hpp)
}

// Immutable once parsed: one Template may be rendered from many threads at once.
class Template {
 public:
  // kInvalidArgument with "line N: <what>" for a syntax error or an unsupported construct.
  static Result<Template> parse(std::string_view source);

  // Renders with `context` as the global variables. kInvalidArgument for a type error,
  // an unsupported filter/test/method, or raise_exception (message "line N: ...");
  // kTooLarge when a limit is hit.
  Result<std::string> render(const boost::json::object& context,
                             const RenderLimits& limits = {}) const;
  // The same with `strftime_now(format)` defined, reading this time (Unix seconds, formatted
  // in UTC). Without it strftime_now is undefined, so `strftime_now is defined` is false.
  Result<std::string> render(const boost::json::object& context, const RenderLimits& limits,
                             std::optional<std::int64_t> now_unix_seconds) const;

 private:
  explicit Template(std::shared_ptr<const detail::ChatTemplateProgram> program);
  std::shared_ptr<const detail::ChatTemplateProgram> program_;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  // The time strftime_now() reports (Llama-3.x templates print today's date with it); unset
  // leaves strftime_now undefined and such templates fall back to their default date.
  std::optional<std::int64_t> now_unix_seconds;
  RenderLimits limits;
};

// request = OpenAI chat request JSON (messages, optional tools, ...);
// tokenizer_config = parsed tokenizer_config.json (chat_template, bos_token, eos_token, ...).
// The template sees what transformers gives it: `messages` (text content parts joined with
// "\n"), `tools` and `documents` when present, every `*_token` of the config (AddedToken
// objects reduced to their "content", nulls left out), the request's `chat_template_kwargs`
// (e.g. enable_thinking), and add_generation_prompt. Errors as Template::render, plus
// kInvalidArgument for a request without a `messages` array. See docs/chat-template.md.
Result<std::string> render_chat(const Template& tmpl, const boost::json::object& request,
                                const boost::json::object& tokenizer_config,
                                const ChatOptions& options);

// Parses tokenizer_config["chat_template"] (a string, or a list of {name, template}: "tool_use"
// when the request has tools and the list has it, else "default") and renders it. kNotFound
// when the config has no chat template. Parses on every call: cache a Template where it matters.
Result<std::string> render_chat(const boost::json::object& request,
                                const boost::json::object& tokenizer_config,
                                const ChatOptions& options);

}  // namespace omni::chat
