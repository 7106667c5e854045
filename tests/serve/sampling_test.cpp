// Sampling as vLLM does it: the request fields' validation (vLLM's 400 messages), greedy,
// temperature, top-k / top-p / min-p, penalties, min_tokens masking, seeded (counter-based)
// draws, raw log-probabilities, and the rejection-sampling rule for MTP drafts, whose output
// distribution is the target's.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <cmath>
#include <map>
#include <numeric>

#include "serve/sampling.hpp"

namespace omni::serve {
namespace {

namespace json = boost::json;

std::variant<SamplingParams, sim::ApiError> parse(std::string_view body, bool chat = false) {
  return parse_sampling(json::parse(body).get_object(), chat);
}

std::string error_of(std::string_view body, bool chat = false) {
  auto r = parse(body, chat);
  if (auto* e = std::get_if<sim::ApiError>(&r)) return std::to_string(e->status) + " " + e->message;
  return "ok";
}

TEST(SamplingParams, VllmsValidationMessages) {
  EXPECT_EQ(error_of(R"({"temperature":-1})"), "400 temperature must be non-negative, got -1.0.");
  EXPECT_EQ(error_of(R"({"top_p":0})"), "400 top_p must be in (0, 1], got 0.0.");
  EXPECT_EQ(error_of(R"({"top_p":1.5})"), "400 top_p must be in (0, 1], got 1.5.");
  EXPECT_EQ(error_of(R"({"top_k":-2})"), "400 top_k must be 0 (disable), or at least 1, got -2.");
  EXPECT_EQ(error_of(R"({"min_p":2})"), "400 min_p must be in [0, 1], got 2.0.");
  EXPECT_EQ(error_of(R"({"repetition_penalty":0})"),
            "400 repetition_penalty must be in (0, 2], got 0.0.");
  EXPECT_EQ(error_of(R"({"logprobs":21})"),
            "400 Requested sample logprobs of 21, which is greater than max allowed: 20");
  EXPECT_EQ(error_of(R"({"logprobs":-1})"), "400 logprobs must be non-negative, got -1.");
  EXPECT_EQ(error_of(R"({"top_logprobs":3})", true),
            "400 when using `top_logprobs`, `logprobs` must be set to true.");
  EXPECT_EQ(error_of(R"({"temperature":"hot"})"), "400 Input should be a valid number");
  EXPECT_EQ(error_of(R"({"temperature":0.5,"top_p":0.9,"top_k":-1,"seed":7,"logprobs":5})"), "ok");
  auto p = std::get<SamplingParams>(parse(R"({"logprobs":true,"top_logprobs":4})", true));
  EXPECT_EQ(p.logprobs, 4);
  p = std::get<SamplingParams>(parse(R"({"temperature":null,"seed":9})"));
  EXPECT_EQ(p.temperature, 1.0);  // vLLM's default
  EXPECT_TRUE(p.seeded);
  EXPECT_EQ(p.seed, 9u);
}

std::vector<float> logits_of(std::initializer_list<double> probs) {
  std::vector<float> out;
  for (const double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

// Empirical distribution of `draws` samples at positions 0..draws-1.
std::vector<double> histogram(Sampler& s, const std::vector<float>& logits,
                              const SamplingParams& params, int draws) {
  std::vector<double> h(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    h[s.sample(logits, params, {}, static_cast<std::uint64_t>(i))] += 1.0 / draws;
  }
  return h;
}

TEST(Sampler, GreedyIsTheArgmaxAndMinTokensMasksStops) {
  Sampler s;
  SamplingParams greedy;
  greedy.temperature = 0.0;
  const auto logits = logits_of({0.1, 0.6, 0.3});
  EXPECT_EQ(s.sample(logits, greedy, {}, 0), 1u);
  const std::vector<std::uint32_t> stops = {1};
  SamplingContext ctx;
  ctx.min_tokens = 2;
  ctx.stop_ids = stops;
  EXPECT_EQ(s.sample(logits, greedy, ctx, 0), 2u);  // token 1 (EOS) masked before min_tokens
  const std::vector<std::uint32_t> two = {2, 2};
  ctx.output = two;
  EXPECT_EQ(s.sample(logits, greedy, ctx, 2), 1u);
}

TEST(Sampler, TemperatureDrawsFollowTheSoftmax) {
  Sampler s;
  SamplingParams p;
  p.seed = 42;
  const auto logits = logits_of({0.5, 0.3, 0.15, 0.05});
  const auto h = histogram(s, logits, p, 20000);
  EXPECT_NEAR(h[0], 0.5, 0.015);
  EXPECT_NEAR(h[1], 0.3, 0.015);
  EXPECT_NEAR(h[2], 0.15, 0.015);
  EXPECT_NEAR(h[3], 0.05, 0.01);
  // Temperature 0.5 squares the ratios: 0.25 : 0.09 : 0.0225 : 0.0025.
  p.temperature = 0.5;
  const auto hot = histogram(s, logits, p, 20000);
  EXPECT_NEAR(hot[0], 0.25 / 0.365, 0.015);
  EXPECT_NEAR(hot[1], 0.09 / 0.365, 0.015);
}

TEST(Sampler, TopKTopPMinPKeepTheMostLikelyTokens) {
  Sampler s;
  const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
  SamplingParams k;
  k.top_k = 2;
  auto h = histogram(s, logits, k, 10000);
  EXPECT_EQ(h[2] + h[3], 0.0);
  EXPECT_NEAR(h[0], 0.4 / 0.7, 0.02);
  SamplingParams topp;
  topp.top_p = 0.75;  // 0.4 + 0.3 = 0.7 < 0.75: the nucleus needs the third token
  h = histogram(s, logits, topp, 10000);
  EXPECT_EQ(h[3], 0.0);
  EXPECT_GT(h[2], 0.0);
  EXPECT_NEAR(h[0], 0.4 / 0.9, 0.02);
  SamplingParams minp;
  minp.min_p = 0.6;  // keeps p >= 0.6 * 0.4 = 0.24
  h = histogram(s, logits, minp, 10000);
  EXPECT_EQ(h[2] + h[3], 0.0);
}

TEST(Sampler, SeededDrawsAreAFunctionOfSeedAndPosition) {
  Sampler a, b;
  SamplingParams p;
  p.seed = 7;
  std::vector<float> logits(1000);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 17) * 0.1f;
  std::vector<std::uint32_t> first, again;
  for (std::uint64_t pos = 0; pos < 50; ++pos) first.push_back(a.sample(logits, p, {}, pos));
  for (std::uint64_t pos = 0; pos < 50; ++pos) again.push_back(b.sample(logits, p, {}, pos));
  EXPECT_EQ(first, again);
  p.seed = 8;
  std::vector<std::uint32_t> other;
  for (std::uint64_t pos = 0; pos < 50; ++pos) other.push_back(a.sample(logits, p, {}, pos));
  EXPECT_NE(first, other);
}

TEST(Sampler, PenaltiesChangeTheDistribution) {
  Sampler s;
  SamplingParams p;
  p.temperature = 0.0;
  p.presence_penalty = 2.0;
  const auto logits = logits_of({0.5, 0.45, 0.05});
  const std::vector<std::uint32_t> out = {0};
  SamplingContext ctx;
  ctx.output = out;
  EXPECT_EQ(s.sample(logits, p, ctx, 1), 1u);  // token 0 seen: its logit drops by 2
  p.presence_penalty = 0.0;
  p.repetition_penalty = 2.0;  // negative logits are multiplied: ln(0.5) * 2 < ln(0.45)
  EXPECT_EQ(s.sample(logits, p, ctx, 1), 1u);
}

TEST(Sampler, RawLogprobsAndTheirTopK) {
  Sampler s;
  const auto logits = logits_of({0.5, 0.3, 0.2});
  const TokenLogprobs lp = s.logprobs(logits, 1, 2);
  EXPECT_NEAR(lp.logprob, std::log(0.3), 1e-6);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].token, 0u);
  EXPECT_NEAR(lp.top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(lp.top[1].token, 1u);
}

// The standard rule with a one-hot draft: accept d with probability p(d), else draw from p
// without d. Whatever the draft, the tokens produced follow p.
TEST(Sampler, RejectionSamplingKeepsTheTargetDistribution) {
  Sampler s;
  SamplingParams p;
  p.seed = 3;
  const auto logits = logits_of({0.5, 0.25, 0.15, 0.1});
  for (const std::uint32_t draft : {0u, 2u}) {
    std::vector<double> h(4, 0.0);
    int accepted = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      std::uint32_t replacement = 0;
      const bool ok = s.verify(logits, p, {}, static_cast<std::uint64_t>(i), draft, replacement);
      accepted += ok;
      EXPECT_TRUE(ok || replacement != draft);
      h[ok ? draft : replacement] += 1.0 / n;
    }
    const double pd = draft == 0 ? 0.5 : 0.15;
    EXPECT_NEAR(static_cast<double>(accepted) / n, pd, 0.015) << "draft " << draft;
    EXPECT_NEAR(h[0], 0.5, 0.015);
    EXPECT_NEAR(h[1], 0.25, 0.015);
    EXPECT_NEAR(h[2], 0.15, 0.015);
    EXPECT_NEAR(h[3], 0.10, 0.015);
  }
  // Greedy: accepted exactly when the draft is the argmax.
  SamplingParams greedy;
  greedy.temperature = 0.0;
  std::uint32_t replacement = 9;
  EXPECT_TRUE(s.verify(logits, greedy, {}, 0, 0, replacement));
  EXPECT_FALSE(s.verify(logits, greedy, {}, 0, 1, replacement));
  EXPECT_EQ(replacement, 0u);
}

}  // namespace
}  // namespace omni::serve
