// Request bodies for /v1/completions and /v1/chat/completions (omni/workload/openai_request.hpp).
#include "omni/workload/openai_request.hpp"
#include "omni/common/json_text.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>

namespace omni::workload {
namespace {

void append_token_array(std::string& out, const std::vector<std::uint32_t>& tokens) {
  out.push_back('[');
  char buf[16];
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i != 0) out.push_back(',');
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, tokens[i]);
    out.append(buf, end);
  }
  out.push_back(']');
}

}  // namespace

Result<Api> api_of_endpoint(std::string_view path) {
  if (path.ends_with("/chat/completions")) return Api::kChat;
  if (path.ends_with("/completions")) return Api::kCompletions;
  return make_error(ErrorCode::kInvalidArgument,
                    "endpoint: expected a path ending in /completions or /chat/completions, got '" +
                        std::string(path) + "'");
}

std::string request_body(const RequestSpec& spec, const BodyOptions& options) {
  const auto tokens = prompt_tokens(spec, options.prompt);
  const std::uint32_t max_tokens = std::max<std::uint32_t>(spec.max_output_tokens, 1);
  std::string out;
  out.reserve(tokens.size() * (options.api == Api::kChat ? 8 : 6) + 256);
  out.push_back('{');
  if (!options.model.empty()) {
    out += "\"model\":";
    json::append_string(out, options.model);
    out.push_back(',');
  }
  if (options.api == Api::kCompletions) {
    out += "\"prompt\":";
    append_token_array(out, tokens);
    out += fmt::format(",\"max_tokens\":{}", max_tokens);
  } else {
    out += R"("messages":[{"role":"user","content":")";
    out += tokens_to_text(tokens);  // letters and spaces only: nothing to escape
    out +=
        fmt::format(R"("}}],"max_tokens":{},"max_completion_tokens":{})", max_tokens, max_tokens);
  }
  out += R"(,"stream":true,"stream_options":{"include_usage":true})";
  if (options.ignore_eos) out += R"(,"ignore_eos":true)";
  out.push_back('}');
  return out;
}

}  // namespace omni::workload
