// The float64 reference on problems small enough to work out by hand.
#include "omni/amla/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "omni/amla/bf16.hpp"

namespace omni::amla {
namespace {

// A hand-built problem: head_dim 4, dv 2, page size 2, one head.
struct Tiny {
  DecodeShape shape{1, 1, 1, 4, 2, 2, 2, 3};
  std::vector<bf16_bits> q;
  std::vector<bf16_bits> kv;
  std::vector<std::int32_t> table{2, 0};
  std::vector<std::int32_t> lens{3};
  DecodeInputs inputs() const {
    DecodeInputs in;
    in.shape = shape;
    in.softmax_scale = 0.5f;
    in.causal = true;
    in.q = q;
    in.kv_cache = kv;
    in.block_table = table;
    in.seqlens_k = lens;
    return in;
  }
};

std::vector<bf16_bits> to_bf16(const std::vector<float>& values) {
  std::vector<bf16_bits> out;
  for (float v : values) out.push_back(float_to_bf16(v));
  return out;
}

TEST(AmlaReference, SoftmaxOverPagedKeys) {
  Tiny t;
  t.q = to_bf16({1, 0, 2, 0});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // page 0 holds keys 2 and (unused) 3; page 1 is never referenced; page 2 holds keys 0, 1.
  t.kv = to_bf16({/*p0*/ 0,   0,   1,   0,   nan, nan, nan, nan,
                  /*p1*/ nan, nan, nan, nan, nan, nan, nan, nan,
                  /*p2*/ 1,   0,   0,   0,   2,   1,   0,   0});
  // scores * 0.5: key0 q.k=1 -> 0.5, key1 2 -> 1, key2 2 -> 1
  std::vector<double> out(2), lse(1);
  reference_decode(t.inputs(), out, lse);
  const double w0 = std::exp(0.5), w1 = std::exp(1.0), w2 = std::exp(1.0), sum = w0 + w1 + w2;
  EXPECT_NEAR(out[0], (w0 * 1 + w1 * 2 + w2 * 0) / sum, 1e-12);
  EXPECT_NEAR(out[1], (w0 * 0 + w1 * 1 + w2 * 0) / sum, 1e-12);
  EXPECT_NEAR(lse[0], std::log(sum), 1e-12);
}

TEST(AmlaReference, ZeroLengthGivesZeroAndMinusInfinity) {
  Tiny t;
  t.q = to_bf16({1, 1, 1, 1});
  t.kv.assign(24, float_to_bf16(std::numeric_limits<float>::quiet_NaN()));
  t.lens = {0};
  std::vector<double> out(2, 7.0), lse(1, 7.0);
  reference_decode(t.inputs(), out, lse);
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
  EXPECT_EQ(lse[0], -std::numeric_limits<double>::infinity());
}

TEST(AmlaReference, CausalVisibility) {
  EXPECT_EQ(visible_keys(10, 2, 0, true), 9);
  EXPECT_EQ(visible_keys(10, 2, 1, true), 10);
  EXPECT_EQ(visible_keys(1, 2, 0, true), 0);
  EXPECT_EQ(visible_keys(0, 2, 1, true), 0);
  EXPECT_EQ(visible_keys(10, 2, 0, false), 10);
}

TEST(AmlaReference, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0)
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256.0f), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace omni::amla

#include "omni/amla/cost.hpp"

namespace omni::amla {
namespace {

TEST(AmlaCost, FlashMlaFormulas) {
  DecodeShape s;
  s.batch = 2;
  s.seqlen_q = 2;
  s.heads_q = 128;
  const std::vector<std::int32_t> lens{4096, 2048};
  // 2 * b * s_q * h_q * mean(s_k) * (576 + 512)
  EXPECT_DOUBLE_EQ(decode_flops(s, lens), 2.0 * 2 * 2 * 128 * 3072.0 * 1088);
  EXPECT_DOUBLE_EQ(decode_bytes(s, lens), 2.0 * (6144.0 * 576 + 2.0 * 2 * 128 * 1088));
}

}  // namespace
}  // namespace omni::amla
