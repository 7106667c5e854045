#include "omni/common/random.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <vector>

namespace omni {
namespace {

TEST(SeededRandom, SameSeedSameSequence) {
  SeededRandom a(42), b(42), c(43);
  bool differs_from_other_seed = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    if (x != c.next_u64()) differs_from_other_seed = true;
  }
  EXPECT_TRUE(differs_from_other_seed);
}

TEST(SeededRandom, MatchesReferenceXoshiro256StarStar) {
  // xoshiro256** seeded by splitmix64(0), computed with an independent implementation.
  // Pinned so that a change of generator (which would change every simulation) is noticed.
  SeededRandom r(0);
  EXPECT_EQ(r.next_u64(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(r.next_u64(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(r.next_u64(), 0x1a5f849d4933e6e0ULL);
}

TEST(Random, UniformIsInUnitInterval) {
  SeededRandom r(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(Random, UniformIntCoversTheRangeEvenly) {
  SeededRandom r(2);
  std::array<int, 6> counts{};
  for (int i = 0; i < 60000; ++i) {
    const auto v = r.uniform_int(1, 6);
    ASSERT_GE(v, 1);
    ASSERT_LE(v, 6);
    ++counts[static_cast<std::size_t>(v - 1)];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

TEST(Random, UniformIntEdgeCases) {
  SeededRandom r(3);
  EXPECT_EQ(r.uniform_int(5, 5), 5);
  EXPECT_EQ(r.uniform_int(9, 2), 9);  // empty range: lo
  const auto full = r.uniform_int(INT64_MIN, INT64_MAX);
  (void)full;  // any value is valid; must not hang or trap
  const auto neg = r.uniform_int(-3, -1);
  EXPECT_GE(neg, -3);
  EXPECT_LE(neg, -1);
}

TEST(Random, ExponentialHasTheRightMean) {
  SeededRandom r(4);
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = r.exponential(4.0);
    ASSERT_GE(x, 0.0);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
  }
  EXPECT_NEAR(sum / n, 0.25, 0.005);
}

TEST(Random, NormalHasTheRightMoments) {
  SeededRandom r(5);
  const int n = 200000;
  std::vector<double> xs(n);
  for (auto& x : xs) x = r.normal(10.0, 2.0);
  const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / n;
  double var = 0;
  for (double x : xs) var += (x - mean) * (x - mean);
  var /= n;
  EXPECT_NEAR(mean, 10.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.03);
}

TEST(Random, BernoulliClampsAndMatchesProbability) {
  SeededRandom r(6);
  EXPECT_FALSE(r.bernoulli(-1.0));
  EXPECT_TRUE(r.bernoulli(2.0));
  int hits = 0;
  for (int i = 0; i < 100000; ++i) hits += r.bernoulli(0.3) ? 1 : 0;
  EXPECT_NEAR(hits, 30000, 700);
}

TEST(Random, WorksWithStdAlgorithms) {
  SeededRandom a(7), b(7);
  std::vector<int> x(50), y(50);
  std::iota(x.begin(), x.end(), 0);
  std::iota(y.begin(), y.end(), 0);
  std::shuffle(x.begin(), x.end(), a);
  std::shuffle(y.begin(), y.end(), b);
  EXPECT_EQ(x, y);
  std::vector<int> sorted = x;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(x, sorted);
}

TEST(SeededRandom, ForkGivesAnIndependentReproducibleStream) {
  SeededRandom a(8), b(8);
  SeededRandom fa = a.fork(), fb = b.fork();
  EXPECT_EQ(fa.next_u64(), fb.next_u64());
  EXPECT_NE(a.next_u64(), fa.next_u64());
}

}  // namespace
}  // namespace omni
