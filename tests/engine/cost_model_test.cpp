#include "omni/engine/cost_model.hpp"

#include <gtest/gtest.h>

namespace omni::engine {
namespace {

CostModel make(const char* model, const char* hw, ParallelLayout layout, MtpConfig mtp = {}) {
  return CostModel(builtin_model_profile(model).value(), builtin_hardware_profile(hw).value(),
                   layout, mtp);
}

StepShape decode(std::uint32_t seqs, std::uint64_t context_each) {
  StepShape s;
  s.decode_seqs = seqs;
  s.decode_context_tokens = seqs * context_each;
  return s;
}

StepShape prefill(std::uint32_t tokens, std::uint64_t context = 0) {
  StepShape s;
  s.prefill_tokens = tokens;
  s.prefill_context_tokens = context;
  s.prefill_seqs = 1;
  return s;
}

TEST(CostModel, EmptyStepTakesNoTime) {
  const auto cm = make("deepseek-v3", "h800", {1, 8, true});
  EXPECT_EQ(cm.step_seconds(StepShape{}), 0.0);
}

TEST(CostModel, BreakdownSumsToTheStepTime) {
  const auto cm = make("deepseek-v3", "h800", {1, 8, true}, {1, 0.9});
  const StepShape s = decode(64, 2000);
  const StepBreakdown b = cm.breakdown(s);
  EXPECT_DOUBLE_EQ(b.total(), cm.step_seconds(s));
  EXPECT_GT(b.attention, 0);
  EXPECT_GT(b.ffn, 0);
  EXPECT_GT(b.lm_head, 0);
  EXPECT_GT(b.mtp, 0);
  EXPECT_DOUBLE_EQ(b.overhead, cm.hardware().step_overhead_s);
}

TEST(CostModel, SmallDecodeBatchesAreMemoryBound) {
  // Weights are read once per step: going from 1 to 8 sequences barely costs more.
  const auto cm = make("llama-3.1-70b", "h200", {8, 1, false});
  const double one = cm.step_seconds(decode(1, 1000));
  const double eight = cm.step_seconds(decode(8, 1000));
  EXPECT_GT(eight, one);
  EXPECT_LT(eight, one * 1.2);
  // A 70B BF16 model over 8 devices: 141 GB / 8 read at 4.8 TB/s * mbu, ~5 ms.
  EXPECT_GT(one, 0.003);
  EXPECT_LT(one, 0.010);
}

TEST(CostModel, LargePrefillIsComputeBoundAndLinearInTokens) {
  const auto cm = make("llama-3.1-70b", "h200", {8, 1, false});
  const double t4k = cm.step_seconds(prefill(4096)) - cm.hardware().step_overhead_s;
  const double t8k = cm.step_seconds(prefill(8192)) - cm.hardware().step_overhead_s;
  EXPECT_GT(t8k, 1.9 * t4k);  // slightly superlinear: causal attention grows with n^2
  EXPECT_LT(t8k, 2.3 * t4k);
}

TEST(CostModel, LongerContextCostsMore) {
  const auto cm = make("deepseek-v3", "h800", {1, 8, true});
  EXPECT_GT(cm.step_seconds(decode(64, 8000)), cm.step_seconds(decode(64, 1000)));
  EXPECT_GT(cm.step_seconds(prefill(1024, 8000)), cm.step_seconds(prefill(1024, 0)));
}

TEST(CostModel, MoreDevicesMakeAStepFaster) {
  const auto tp4 = make("qwen3-235b-a22b", "h200", {4, 1, false});
  const auto tp8 = make("qwen3-235b-a22b", "h200", {8, 1, false});
  EXPECT_LT(tp8.step_seconds(prefill(4096)), tp4.step_seconds(prefill(4096)));
  EXPECT_LT(tp8.step_seconds(decode(32, 2000)), tp4.step_seconds(decode(32, 2000)));
}

TEST(CostModel, MtpVerifiesMoreTokensForALittleMoreTime) {
  const auto plain = make("deepseek-v3", "h800", {1, 16, true});
  const auto mtp = make("deepseek-v3", "h800", {1, 16, true}, {1, 0.85});
  const double t0 = plain.step_seconds(decode(256, 4000));
  const double t1 = mtp.step_seconds(decode(256, 4000));
  EXPECT_GT(t1, t0);
  EXPECT_LT(t1, 1.5 * t0);
}

TEST(CostModel, KvCapacityFollowsMemoryAndLayout) {
  const auto one = make("deepseek-v3", "h800", {1, 1, false});
  EXPECT_EQ(one.kv_capacity_tokens(), 0u);  // 671 GB of weights do not fit one GPU
  const auto ep16 = make("deepseek-v3", "h200", {1, 16, true});
  const auto ep32 = make("deepseek-v3", "h200", {1, 32, true});
  EXPECT_GT(ep16.kv_capacity_tokens(), 1'000'000u);
  EXPECT_GT(ep32.kv_capacity_tokens(), 2 * ep16.kv_capacity_tokens());
  const auto llama = make("llama-3.1-70b", "h200", {8, 1, false});
  // 8 * (0.85 * 131 GiB) - 141 GB of weights, at 40 KiB per token (8 KV heads over 8 GPUs).
  EXPECT_GT(llama.kv_capacity_tokens(), 1'500'000u);
  EXPECT_LT(llama.kv_capacity_tokens(), 3'000'000u);
}

TEST(CostModel, KvTransferTimeIsBytesOverTheLink) {
  const auto cm = make("deepseek-v3", "h800", {1, 8, true});
  const double bytes = 1000 * cm.model().kv_bytes_per_token();
  EXPECT_DOUBLE_EQ(cm.kv_transfer_seconds(1000, 400), bytes / 50e9);
  EXPECT_EQ(cm.kv_transfer_seconds(1000, 0), 0.0);
}

TEST(CostModel, PrefillPairsAreEstimatedFromEqualChunksWhenNotGiven) {
  const auto cm = make("deepseek-v3", "h800", {1, 8, true});
  StepShape estimated;
  estimated.prefill_tokens = 2000;
  estimated.prefill_context_tokens = 1000;
  estimated.prefill_seqs = 2;
  StepShape exact = estimated;  // two chunks of 1000 tokens, each after 500 cached tokens
  exact.prefill_attention_pairs = 2 * (1000 * 500 + 1000 * 1001 / 2);
  EXPECT_DOUBLE_EQ(cm.step_seconds(estimated), cm.step_seconds(exact));
}

}  // namespace
}  // namespace omni::engine
