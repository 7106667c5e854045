#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "omni/cluster/histogram.hpp"
#include "omni/common/random.hpp"

namespace omni::cluster {
namespace {

TEST(LogHistogram, EmptyReportsZeros) {
  LogHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.quantile(0.5), 0.0);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_TRUE(h.cdf().empty());
}

TEST(LogHistogram, QuantilesWithinOnePercentOfExactNearestRank) {
  SeededRandom random(42);
  LogHistogram h;
  std::vector<double> values;
  for (int i = 0; i < 20000; ++i) {
    const double v = std::exp(random.normal(3.0, 1.5));  // milliseconds, heavy tail
    values.push_back(v);
    h.add(v);
  }
  std::sort(values.begin(), values.end());
  for (const double q : {0.01, 0.5, 0.9, 0.99, 0.999}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
    const double exact = values[rank - 1];
    EXPECT_NEAR(h.quantile(q), exact, exact * 0.01) << "q=" << q;
  }
  double sum = 0;
  for (const double v : values) sum += v;
  EXPECT_NEAR(h.mean(), sum / static_cast<double>(values.size()), 1e-9 * sum);
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.max(), values.back());
}

TEST(LogHistogram, WeightedAddsCountAsRepeatedValues) {
  LogHistogram a, b;
  a.add(5.0, 3);
  a.add(50.0);
  for (int i = 0; i < 3; ++i) b.add(5.0);
  b.add(50.0);
  EXPECT_EQ(a.count(), b.count());
  EXPECT_DOUBLE_EQ(a.quantile(0.75), b.quantile(0.75));
  EXPECT_DOUBLE_EQ(a.mean(), b.mean());
  EXPECT_NEAR(a.quantile(0.75), 5.0, 0.05);
  EXPECT_NEAR(a.quantile(1.0), 50.0, 0.5);
}

TEST(LogHistogram, MergeEqualsAddingEverythingToOne) {
  LogHistogram a, b, all;
  for (int i = 1; i <= 100; ++i) {
    (i % 2 ? a : b).add(i * 1.5);
    all.add(i * 1.5);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_DOUBLE_EQ(a.quantile(0.9), all.quantile(0.9));
  EXPECT_DOUBLE_EQ(a.min(), all.min());
  EXPECT_DOUBLE_EQ(a.max(), all.max());
}

TEST(LogHistogram, CdfIsMonotoneAndEndsAtOne) {
  LogHistogram h;
  for (int i = 1; i <= 50; ++i) h.add(i);
  const auto cdf = h.cdf();
  ASSERT_FALSE(cdf.empty());
  for (std::size_t i = 1; i < cdf.size(); ++i) {
    EXPECT_GT(cdf[i].first, cdf[i - 1].first);
    EXPECT_GT(cdf[i].second, cdf[i - 1].second);
  }
  EXPECT_DOUBLE_EQ(cdf.back().second, 1.0);
}

}  // namespace
}  // namespace omni::cluster
