// vLLM's /v1/completions and /v1/chat/completions request bodies: parsing, validation and
// tokenization, with vLLM's status codes and error bodies (spec §3.2, §3.6). Pure: no I/O.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/api_error.hpp"
#include "sim/output_plan.hpp"
#include "sim/text_codec.hpp"

namespace omni::sim {

enum class Endpoint { kCompletions, kChat };

// What the server knows when validating: the served names and the context length.
struct ModelLimits {
  std::vector<std::string> served_names;  // the first is the default and the metrics label
  std::uint32_t max_model_len = 0;
};

struct Bootstrap {  // SGLang PD fields (numeric strings coerced to integers, as SGLang does)
  std::string host;
  std::int64_t port = 0;
  std::uint64_t room = 0;
};

// The most choices one request may ask for (vLLM has no limit; omni-sim bounds the work).
inline constexpr std::int64_t kMaxChoices = 128;

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // the served name the request resolved to
  std::vector<std::uint32_t> prompt_tokens;
  std::uint32_t max_tokens = 16;  // effective output limit
  std::optional<std::int64_t> requested_max_tokens;
  std::uint32_t min_tokens = 0;
  std::uint32_t n = 1;  // choices (vLLM's parallel sampling: n engine requests)
  StopConditions stop;  // stop, stop_token_ids, ignore_eos, include_stop_str_in_output, min_tokens
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage_stats = false;
  bool return_token_ids = false;
  bool echo = false;
  std::optional<std::int64_t> seed;
  std::optional<std::string> body_request_id;
  std::optional<std::string> cache_salt;
  // The object as the client sent it (opaque to this layer; see pd.hpp). Absent when null.
  std::optional<boost::json::object> kv_transfer_params;
  std::optional<Bootstrap> bootstrap;
};

using ParsedRequest = std::variant<GenerationRequest, ApiError>;

// Parses and validates one request body. Tokenizes the prompt (chat: renders the messages with
// the simple built-in template first) so that length limits are checked as vLLM checks them.
ParsedRequest parse_generation_request(std::string_view body, Endpoint endpoint,
                                       const ModelLimits& limits, const TextCodec& codec);

// The built-in chat template, used when the model has none: "<|role|>\ncontent\n" per message,
// then "<|assistant|>\n" when add_generation_prompt.
std::string render_chat(const boost::json::array& messages, bool add_generation_prompt = true);

// A chat request's prompt tokens, as vLLM's chat route makes them: the messages rendered by the
// codec's chat template (the request's `add_generation_prompt`, `continue_final_message`,
// `chat_template`, `tools`, `chat_template_kwargs`), then tokenized without adding special
// tokens (the rendered text already holds BOS) unless the request sets `add_special_tokens`.
// Errors are vLLM's: 400 for bad fields and template errors.
std::variant<std::vector<std::uint32_t>, ApiError> chat_prompt_tokens(
    const boost::json::object& request, const TextCodec& codec);

}  // namespace omni::sim
