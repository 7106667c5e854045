// libFuzzer target for omni-sim's request validation (untrusted HTTP bodies): every input must
// parse into a request within the model's limits, or be refused with a 4xx/5xx error.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/output_plan.hpp"
#include "sim/pd.hpp"
#include "sim/request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace omni::sim;
  static const auto codec = make_builtin_codec();
  static const ModelLimits limits{{"m"}, 256};
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (Endpoint e : {Endpoint::kCompletions, Endpoint::kChat}) {
    ParsedRequest r = parse_generation_request(body, e, limits, *codec);
    if (const auto* err = std::get_if<ApiError>(&r)) {
      if (err->status < 400 || err->status > 599 || err->message.empty()) std::abort();
      continue;
    }
    const auto& req = std::get<GenerationRequest>(r);
    if (req.prompt_tokens.empty() ||
        req.prompt_tokens.size() + req.max_tokens > limits.max_model_len) {
      std::abort();
    }
    (void)parse_pd_request(req.kv_transfer_params);
    // Where the generation would stop: within its limit, the shown text within its tokens.
    const TokenGenerator gen(0, "fuzz", *codec);
    const OutputPlan plan = plan_output(gen, *codec, req.max_tokens,
                                        1 + static_cast<std::uint32_t>(size % 300), req.stop);
    if (plan.tokens == 0 || plan.tokens > req.max_tokens || plan.text_tokens > plan.tokens)
      std::abort();
  }
  return 0;
}
