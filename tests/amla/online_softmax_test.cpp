// AMLA's exponent-add rescale and the row bookkeeping shared by every ISA's kernels.
#include "online_softmax.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace omni::amla::detail_kernel {
namespace {

float add_exponent(float x, int shift) {
  return std::bit_cast<float>(exponent_add(std::bit_cast<std::uint32_t>(x), shift));
}

TEST(AmlaExponentAdd, IsAnExactPowerOfTwoScaleForNormalResults) {
  for (const float x : {1.0f, -3.5f, 1.2345678e-3f, 6.02e23f, -1e-20f}) {
    for (const int shift : {0, -1, -7, -40}) {
      EXPECT_EQ(add_exponent(x, shift), std::ldexp(x, shift)) << x << " * 2^" << shift;
    }
  }
}

TEST(AmlaExponentAdd, FlushesResultsBelowTheSmallestNormalToSignedZero) {
  EXPECT_EQ(add_exponent(1.0f, -126), std::numeric_limits<float>::min());  // still normal
  EXPECT_EQ(std::bit_cast<std::uint32_t>(add_exponent(1.0f, -127)), 0U);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(add_exponent(-1.0f, -200)), 0x80000000U);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(add_exponent(0.0f, -3)), 0U);  // zero stays zero
}

TEST(AmlaRowUpdate, RoundsTheMaxUpAndRescalesOnlyWhenItMoves) {
  RowUpdate u = update_row<true>(kNegInf, 2.3f);
  EXPECT_EQ(u.new_max, 3.0f);
  EXPECT_FALSE(u.rescale);           // nothing accumulated yet
  u = update_row<true>(3.0f, 2.9f);  // ceil(2.9) = 3: no move
  EXPECT_FALSE(u.rescale);
  EXPECT_EQ(u.new_max, 3.0f);
  u = update_row<true>(3.0f, 5.2f);
  EXPECT_TRUE(u.rescale);
  EXPECT_EQ(u.new_max, 6.0f);
  EXPECT_EQ(u.shift, -3);
  EXPECT_EQ(u.factor, 0.125f);
  u = update_row<true>(kNegInf, kNegInf);  // a row that has seen no key
  EXPECT_EQ(u.new_max, kNegInf);
  EXPECT_FALSE(u.rescale);
}

TEST(AmlaRowUpdate, FlashRescalesByTheExactDifference) {
  const RowUpdate u = update_row<false>(1.0f, 1.5f);
  EXPECT_TRUE(u.rescale);
  EXPECT_EQ(u.new_max, 1.5f);
  EXPECT_FLOAT_EQ(u.factor, std::exp2(-0.5f));
  EXPECT_FALSE(update_row<false>(1.5f, 1.0f).rescale);
}

}  // namespace
}  // namespace omni::amla::detail_kernel
