// libFuzzer target for the chat template engine (templates come from tokenizer configs that
// users point us to). The input is a template, optionally followed by "\n---\n" and a JSON
// context; it must parse and render, or fail with an error, within small limits, and render
// identically twice (the interpreter has no hidden state).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <boost/json.hpp>

#include "omni/chat/template.hpp"

namespace {

constexpr std::string_view kDefaultContext = R"({
  "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
  "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": " hi "},
               {"role": "assistant", "content": null, "tool_calls": [
                 {"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
               {"role": "tool", "content": "42"}],
  "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find("\n---\n");
  const std::string_view source = input.substr(0, split);
  const std::string_view context_text =
      split == std::string_view::npos ? kDefaultContext : input.substr(split + 5);

  boost::system::error_code ec;
  boost::json::value context = boost::json::parse(context_text, ec);
  if (ec || !context.is_object()) return 0;

  auto tmpl = omni::chat::Template::parse(source);
  if (!tmpl.ok()) return 0;
  omni::chat::RenderLimits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1 << 20;
  limits.max_depth = 64;
  auto first = tmpl->render(context.get_object(), limits);
  auto second = tmpl->render(context.get_object(), limits);
  if (first.ok() != second.ok()) std::abort();
  if (first.ok() && *first != *second) std::abort();
  if (!first.ok() && first.error() != second.error()) std::abort();
  return 0;
}
