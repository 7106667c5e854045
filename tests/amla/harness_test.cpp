// The harness must produce inputs that catch the bugs it is meant to catch.
#include "omni/amla/harness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "omni/amla/bf16.hpp"

namespace omni::amla {
namespace {

TEST(AmlaHarness, InputsAreNeverZeroAndUnusedRowsAreNan) {
  SeededRandom random(7);
  CaseSpec spec;
  spec.seqlens_k = {70, 0, 5};
  spec.heads_q = 4;
  const TestCase tc = make_test_case(spec, random);
  for (const bf16_bits v : tc.q) ASSERT_NE(v & 0x7fff, 0);
  const DecodeShape& s = tc.shape;
  EXPECT_EQ(s.max_pages_per_seq, 2);
  EXPECT_EQ(s.num_pages, 2 + 0 + 1 + 2);
  std::set<std::int32_t> used;
  std::size_t finite_rows = 0;
  for (int b = 0; b < s.batch; ++b) {
    for (int p = 0; p < (tc.seqlens_k[static_cast<std::size_t>(b)] + 63) / 64; ++p) {
      EXPECT_TRUE(used.insert(tc.block_table[static_cast<std::size_t>(b * s.max_pages_per_seq + p)])
                      .second);
    }
  }
  const std::size_t rows = static_cast<std::size_t>(s.num_pages * s.page_size);
  for (std::size_t r = 0; r < rows; ++r) {
    const float first = bf16_to_float(tc.kv_cache[r * static_cast<std::size_t>(s.head_dim)]);
    if (!std::isnan(first)) {
      ++finite_rows;
      EXPECT_NE(tc.kv_cache[r * static_cast<std::size_t>(s.head_dim)] & 0x7fff, 0);
    }
  }
  EXPECT_EQ(finite_rows, 75U);  // exactly the visible keys; everything else is NaN
  // unused block-table entries point at pages no sequence owns (NaN pages)
  const auto spare = tc.block_table[static_cast<std::size_t>(1 * s.max_pages_per_seq)];
  EXPECT_EQ(used.count(spare), 0U);
}

TEST(AmlaHarness, SameSeedSameCase) {
  CaseSpec spec;
  spec.seqlens_k = {9};
  spec.heads_q = 2;
  SeededRandom a(3), b(3);
  EXPECT_EQ(make_test_case(spec, a).kv_cache, make_test_case(spec, b).kv_cache);
}

TEST(AmlaHarness, CompareChecksTolerancesAndNonFinitePositions) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> expected{1.0, -2.0, -inf, 0.5};
  std::vector<float> actual{1.001f, -2.0f, -std::numeric_limits<float>::infinity(), 0.5f};
  EXPECT_TRUE(compare(actual, expected, Tolerance{}).passed);
  actual[0] = 1.2f;
  Comparison c = compare(actual, expected, Tolerance{});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.out_of_tolerance, 1U);
  EXPECT_EQ(c.worst_index, 0U);
  actual[0] = 1.0f;
  actual[2] = std::numeric_limits<float>::infinity();  // wrong sign
  c = compare(actual, expected, Tolerance{});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite_mismatch, 1U);
  actual[2] = -std::numeric_limits<float>::infinity();
  std::vector<float> poisoned(4);
  poison(poisoned);
  c = compare(poisoned, expected, Tolerance{});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite_mismatch, 4U);
}

TEST(AmlaHarness, VariableLengthsStayInRange) {
  SeededRandom random(11);
  const auto lens = make_seqlens(64, 100, true, random);
  std::set<std::int32_t> distinct(lens.begin(), lens.end());
  EXPECT_GT(distinct.size(), 10U);
  for (const auto len : lens) {
    EXPECT_GE(len, 1);
    EXPECT_LE(len, 200);
  }
  for (const auto len : make_seqlens(4, 100, false, random)) EXPECT_EQ(len, 100);
}

}  // namespace
}  // namespace omni::amla
