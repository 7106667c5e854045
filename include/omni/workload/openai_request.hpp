// The JSON body that replays one RequestSpec against an OpenAI-compatible server.
//
//   /v1/completions       {"model"?, "prompt": [token ids], "max_tokens": n, "stream": true,
//                          "stream_options": {"include_usage": true}, "ignore_eos": true}
//   /v1/chat/completions  {"model"?, "messages": [{"role": "user", "content": text}],
//                          "max_tokens": n, "max_completion_tokens": n, "stream": true, ...}
//
// Token-id prompts reach a vLLM engine without a tokenizer in between, so the engine's
// prefix cache sees exactly the block sharing of the trace. Chat prompts use the text form of
// the same tokens (omni/workload/prompt.hpp). `ignore_eos` makes the engine generate exactly
// max_output_tokens, as the trace recorded; usage is requested so output tokens are counted
// by the server.
#pragma once

#include <string>
#include <string_view>

#include "omni/common/result.hpp"
#include "omni/workload/prompt.hpp"
#include "omni/workload/request_spec.hpp"

namespace omni::workload {

enum class Api { kCompletions, kChat };
// "/v1/completions" or "/v1/chat/completions" (the path decides the body's shape).
Result<Api> api_of_endpoint(std::string_view path);

struct BodyOptions {
  Api api = Api::kCompletions;
  std::string model;  // empty: the field is left out and the server picks its model
  bool ignore_eos = true;
  PromptOptions prompt;
};

std::string request_body(const RequestSpec& spec, const BodyOptions& options);

}  // namespace omni::workload
