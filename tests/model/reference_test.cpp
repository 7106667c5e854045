// The float64 reference: routing semantics against transformers' rules, and the checkpoint
// dtypes against the f32 weights they were quantized from.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "test_models.hpp"

namespace omni::model {
namespace {

using testing::micro_config;

TEST(ReferenceRouter, NoauxTcPicksWithinTheBestGroupsAndNormalises) {
  const auto c = micro_config();
  const auto master = random_weights(c, 11);
  auto src = to_source(master, DType::kF32);
  ASSERT_TRUE(src.ok());
  auto w = bind_weights(c, **src, true);
  ASSERT_TRUE(w.ok()) << w.error().message;
  const MoeWeights& moe = w->layers[1].moe;
  std::set<int> used;
  for (int t = 0; t < 40; ++t) {
    std::vector<double> x(static_cast<std::size_t>(c.hidden_size));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(0.37 * static_cast<double>(i * (t + 1)) + t);
    const auto routed = reference_route(c, moe, x);
    ASSERT_EQ(routed.size(), 3U);
    double sum = 0.0;
    std::set<int> groups;
    for (const auto& r : routed) {
      sum += r.weight;
      groups.insert(r.expert / (c.n_routed_experts / c.n_group));
      used.insert(r.expert);
    }
    EXPECT_NEAR(sum, c.routed_scaling_factor, 1e-12);  // norm_topk_prob, then the scaling
    EXPECT_LE(groups.size(), static_cast<std::size_t>(c.topk_group));
  }
  EXPECT_GE(used.size(), 6U) << "routing is degenerate";
}

TEST(ReferenceRouter, SoftmaxGreedyWeightsAreTheProbabilities) {
  auto c = micro_config(Arch::kDeepseekV2);
  c.topk_method = TopkMethod::kGreedy;
  const auto master = random_weights(c, 5);
  auto src = to_source(master, DType::kF32);
  auto w = bind_weights(c, **src, true);
  ASSERT_TRUE(w.ok()) << w.error().message;
  std::vector<double> x(static_cast<std::size_t>(c.hidden_size), 0.3);
  const auto routed = reference_route(c, w->layers[1].moe, x);
  double sum = 0.0;
  for (const auto& r : routed) sum += r.weight;
  EXPECT_GT(sum, 0.0);
  EXPECT_LT(sum, 1.0);  // top-3 of 8 softmax probabilities, not renormalised
}

TEST(Reference, QuantizedCheckpointsStayCloseToF32) {
  const auto c = micro_config();
  const auto master = random_weights(c, 21);
  const std::vector<int> tokens = {1, 2, 3, 100, 200, 300, 400, 511};
  auto f32 = to_source(master, DType::kF32);
  auto w32 = bind_weights(c, **f32, true);
  ASSERT_TRUE(w32.ok());
  const auto exact = reference_forward(c, *w32, tokens);
  for (const auto& [dtype, tol] :
       {std::pair{DType::kBF16, 0.02}, std::pair{DType::kF8E4M3, 0.15}}) {
    auto src = to_source(master, dtype);
    ASSERT_TRUE(src.ok());
    auto w = bind_weights(c, **src, true);
    ASSERT_TRUE(w.ok()) << w.error().message;
    const auto out = reference_forward(c, *w, tokens);
    const double err = testing::rms_rel_error(out.logits, exact.logits);
    std::printf("%s: rms relative logit error %.3g\n", std::string(dtype_name(dtype)).c_str(), err);
    EXPECT_LT(err, tol) << dtype_name(dtype);
    EXPECT_GT(err, 0.0) << dtype_name(dtype);
  }
}

TEST(Reference, CausalPrefixesAgreeAndMtpIsDeterministic) {
  const auto c = micro_config();
  const auto master = random_weights(c, 4);
  auto src = to_source(master, DType::kF32);
  auto w = bind_weights(c, **src, true);
  ASSERT_TRUE(w.ok());
  const std::vector<int> tokens = {9, 8, 7, 6, 5};
  const auto full = reference_forward(c, *w, tokens);
  const auto prefix = reference_forward(c, *w, std::span(tokens).first(3));
  const std::size_t V = static_cast<std::size_t>(c.vocab_size);
  for (std::size_t i = 0; i < 3 * V; ++i) EXPECT_NEAR(full.logits[i], prefix.logits[i], 1e-12);
  std::vector<int> next(tokens.begin() + 1, tokens.end());
  next.push_back(42);
  const auto draft = reference_mtp(c, *w, next, full.hidden);
  ASSERT_EQ(draft.size(), 5 * V);
  EXPECT_EQ(draft, reference_mtp(c, *w, next, full.hidden));
  // Position 0's embedding is masked: the draft there does not depend on its token.
  next[0] = 300;
  const auto other = reference_mtp(c, *w, next, full.hidden);
  for (std::size_t i = 0; i < V; ++i) EXPECT_EQ(draft[i], other[i]);
  // Row 0's input is its hidden state only, so later rows see the same keys: unchanged too.
  for (std::size_t i = V; i < 2 * V; ++i) EXPECT_EQ(draft[i], other[i]);
  next[1] = 301;
  EXPECT_NE(reference_mtp(c, *w, next, full.hidden)[V], draft[V]);
}

}  // namespace
}  // namespace omni::model
