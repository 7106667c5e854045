// One request's generation on an Engine (the one-shot `omni-serve run` and the first
// `omni-serve serve`, which serves one request at a time): prefill, then one token per step,
// greedy at temperature 0 or sampled from softmax(logits / T) with a seeded generator.
// The sequence uses the cache's pages 0..n in order (part 2 replaces this with the block pool).
//
//   Session s(engine, options);
//   auto first = s.prefill(prompt);           // the first generated token
//   while (!s.done()) { auto t = s.next(); }  // one decode step each
//
// Threading: a Session uses its Engine exclusively while it lives.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "omni/model/engine.hpp"

namespace omni::model {

struct GenerateOptions {
  int max_tokens = 16;
  double temperature = 0.0;  // 0: greedy
  bool ignore_eos = false;
  std::optional<int> eos_token_id;
  std::uint64_t seed = 0;
};

struct GenerateStats {
  int prompt_tokens = 0;
  int output_tokens = 0;
  double prefill_seconds = 0.0;  // the prompt's forward pass (incl. the first token)
  double decode_seconds = 0.0;   // every later step
  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;  // (output_tokens - 1) / decode_seconds
};

class Session {
 public:
  Session(Engine& engine, GenerateOptions options);
  // Errors: an empty prompt, a prompt + max_tokens beyond the cache, a token out of range.
  Result<std::int32_t> prefill(std::span<const std::int32_t> prompt);
  Result<std::int32_t> next();
  bool done() const noexcept { return done_; }
  // "length" or "stop" once done().
  const std::string& finish_reason() const noexcept { return finish_; }
  const std::vector<std::int32_t>& output() const noexcept { return output_; }
  const GenerateStats& stats() const noexcept { return stats_; }
  // Log-softmax of the last step's logits (the rows the step returned), for checks.
  std::span<const float> last_logits() const noexcept { return last_logits_; }

 private:
  std::int32_t pick(std::span<const float> logits);
  void accept(std::int32_t token);

  Engine& engine_;
  GenerateOptions options_;
  std::vector<std::int32_t> tokens_, pages_, output_;
  std::span<const float> last_logits_;
  GenerateStats stats_;
  std::string finish_;
  bool done_ = false;
  std::uint64_t rng_;
};

// Log-softmax over every position of `tokens` (one prefill; the cache's first pages):
// [tokens.size()][vocab], in float64.
Result<std::vector<double>> prompt_logprobs(Engine& engine, std::span<const std::int32_t> tokens);

}  // namespace omni::model
