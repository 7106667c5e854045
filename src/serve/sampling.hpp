// Sampling as vLLM v1 does it, on one row of logits at a time (vllm/v1/sample/sampler.py):
//
//   raw logits ──(logprobs: log-softmax of the raw logits, vLLM's default raw_logprobs)
//      │ penalties (repetition over prompt + output, presence / frequency over the output)
//      │ min_tokens: EOS and stop token ids masked while the output is shorter
//      ├─ greedy (temperature < 1e-5): argmax
//      └─ / temperature ─► min_p ─► top_k ─► top_p ─► draw
//
// Draws are counter-based: the uniform number of output position i of a request is a hash of
// (seed, i, purpose), so a request gives the same tokens wherever and whenever it runs (a PD
// decode instance, a preempted and recomputed request, a batch of any size). Requests without
// a seed get a random one.
//
// Speculative decoding (MTP drafts are the draft model's argmax, i.e. a one-hot draft
// distribution q): a draft d is accepted when u < p(d) (p the processed target distribution),
// else the position samples from p with d removed (max(p - q, 0) renormalised): the standard
// rejection-sampling rule, which leaves the output distribution that of the target model.
// Greedy requests accept a draft when it equals the target's argmax.
//
// Pure; a Sampler's scratch makes it single-threaded (one per thread).
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "sim/api_error.hpp"

namespace omni::serve {

struct SamplingParams {
  double temperature = 1.0;  // vLLM's default without a generation config
  double top_p = 1.0;
  int top_k = 0;  // 0 or -1: all tokens
  double min_p = 0.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  double repetition_penalty = 1.0;
  std::uint64_t seed = 0;
  bool seeded = false;
  // Top log-probabilities to return per output token (completions `logprobs`, chat
  // `top_logprobs` with `logprobs: true`); nullopt: none.
  std::optional<int> logprobs;

  bool greedy() const noexcept { return temperature < 1e-5; }
  bool penalized() const noexcept {
    return presence_penalty != 0.0 || frequency_penalty != 0.0 || repetition_penalty != 1.0;
  }
};

// vLLM's max_logprobs default.
inline constexpr int kMaxLogprobs = 20;

// The sampling fields of a /v1/completions or /v1/chat/completions body, validated with vLLM's
// messages (400 BadRequestError naming the field). `chat` reads logprobs as a bool and
// top_logprobs as the count.
std::variant<SamplingParams, sim::ApiError> parse_sampling(const boost::json::object& body,
                                                           bool chat);

// One request's history the penalties and min_tokens look at.
struct SamplingContext {
  std::span<const std::uint32_t> prompt;
  std::span<const std::uint32_t> output;  // generated so far (before this position)
  // Masked while output.size() < min_tokens: EOS (unless ignore_eos) and the stop token ids.
  std::uint32_t min_tokens = 0;
  std::span<const std::uint32_t> stop_ids;
};

struct TopLogprob {
  std::uint32_t token = 0;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  float logprob = 0.0f;         // of the sampled token (raw logits)
  std::vector<TopLogprob> top;  // the params' top-k, best first
};

class Sampler {
 public:
  // A uniform number in [0, 1) for (seed, position, purpose).
  static double uniform(std::uint64_t seed, std::uint64_t position, std::uint64_t purpose) noexcept;

  // The token at output position `position` from `logits` (one row of the vocabulary).
  std::uint32_t sample(std::span<const float> logits, const SamplingParams& params,
                       const SamplingContext& ctx, std::uint64_t position);

  // Rejection sampling of one drafted token at `position`: true (accepted) or false with the
  // replacement token in `replacement` (drawn from p without the draft).
  bool verify(std::span<const float> logits, const SamplingParams& params,
              const SamplingContext& ctx, std::uint64_t position, std::uint32_t draft,
              std::uint32_t& replacement);

  // Raw log-probability of `token` and the top `k` (k may be 0).
  TokenLogprobs logprobs(std::span<const float> logits, std::uint32_t token, int k);

 private:
  // The processed distribution: candidates (ids, unnormalised probabilities) with their sum.
  void build(std::span<const float> logits, const SamplingParams& params,
             const SamplingContext& ctx);
  std::uint32_t draw(double u, std::int64_t exclude) const;
  double prob(std::uint32_t token) const;
  std::uint32_t argmax() const;

  std::vector<float> row_;  // processed logits
  std::vector<float> p_;    // unnormalised probabilities of the candidates
  std::vector<float> scratch_;
  std::vector<std::uint32_t> ids_;
  bool all_ = false;  // candidates are the whole vocabulary in id order (ids_ unused)
  double sum_ = 0.0;
  std::vector<std::uint32_t> order_;
};

}  // namespace omni::serve
