// Stop conditions as vLLM applies them (sim/output_plan.hpp).
#include "sim/output_plan.hpp"

#include <algorithm>

#include "sim/response.hpp"

namespace omni::sim {

OutputPlan plan_output(const TokenGenerator& gen, const TextCodec& codec, std::uint32_t max_tokens,
                       std::uint32_t eos_after, const StopConditions& stop) {
  OutputPlan plan;
  // EOS is masked until min_tokens tokens exist (vLLM's min-tokens logits processor).
  const std::uint32_t eos_at = stop.ignore_eos ? 0 : std::max(eos_after, stop.min_tokens + 1);
  const bool eos_in_range = eos_at > 0 && eos_at <= max_tokens;
  // Tokens before the EOS may each end the request on a stop token or a stop string.
  const std::uint32_t scan = eos_in_range ? eos_at - 1 : max_tokens;
  const bool strings = std::any_of(stop.stop.begin(), stop.stop.end(),
                                   [](const std::string& s) { return !s.empty(); });
  if (strings || !stop.stop_token_ids.empty()) {
    std::string text;
    for (std::uint32_t i = 0; i < scan; ++i) {
      const std::uint32_t token = gen.at(i);
      const std::uint32_t n = i + 1;
      const std::size_t before = text.size();
      text += codec.decode(std::span<const std::uint32_t>(&token, 1));
      if (n <= stop.min_tokens) continue;
      if (std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), token) !=
          stop.stop_token_ids.end()) {
        plan.tokens = plan.text_tokens = n;
        plan.stops = true;
        plan.stop_reason = std::to_string(token);
        return plan;
      }
      for (const std::string& s : stop.stop) {
        if (s.empty()) continue;
        // Only a match that the new token completed (vLLM searches the tail it could touch).
        const std::size_t from = before + 1 > s.size() ? before + 1 - s.size() : 0;
        const std::size_t at = text.find(s, from);
        if (at == std::string::npos) continue;
        plan.tokens = plan.text_tokens = n;
        plan.stops = true;
        plan.stop_reason = json_quote(s);
        plan.text_bytes = stop.include_stop_str_in_output ? at + s.size() : at;
        return plan;
      }
    }
  }
  if (eos_in_range) {
    plan.tokens = eos_at;
    plan.text_tokens = eos_at - 1;
    plan.stops = true;
    return plan;
  }
  plan.tokens = plan.text_tokens = max_tokens;
  return plan;
}

std::string ShownText::feed(std::uint32_t from, std::uint32_t to, const TextCodec& codec,
                            const TokenGenerator& gen) {
  if (plan_->stops) to = std::min(to, plan_->text_tokens);
  if (from >= to) return {};
  std::string text = codec.decode(gen.range(from, to));
  if (plan_->stops && plan_->text_bytes != std::string::npos) {
    const std::size_t left = plan_->text_bytes > shown_ ? plan_->text_bytes - shown_ : 0;
    if (text.size() > left) text.resize(left);
  }
  shown_ += text.size();
  return text;
}

}  // namespace omni::sim
