#include "omni/placement/synthetic.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace omni::placement {
namespace {

SyntheticOptions small_options() {
  SyntheticOptions o;
  o.layers = 12;
  o.experts = 64;
  o.tokens_per_layer = 10000.0;
  return o;
}

// Pearson correlation of two layers' log loads.
double log_correlation(std::span<const double> a, std::span<const double> b) {
  const std::size_t n = a.size();
  std::vector<double> x(n);
  std::vector<double> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::log(a[i] + 1e-9);
    y[i] = std::log(b[i] + 1e-9);
  }
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  double sxy = 0.0;
  double sxx = 0.0;
  double syy = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

TEST(SyntheticTest, SameSeedSameLoads) {
  SeededRandom a(42);
  SeededRandom b(42);
  SeededRandom c(43);
  const auto wa = synthetic_windows(small_options(), 3, a);
  const auto wb = synthetic_windows(small_options(), 3, b);
  const auto wc = synthetic_windows(small_options(), 3, c);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(wa[i].values(), wb[i].values());
  EXPECT_NE(wa[0].values(), wc[0].values());
}

TEST(SyntheticTest, ZipfSkewAndTotals) {
  SeededRandom random(7);
  SyntheticOptions o = small_options();
  o.noise_sigma = 0.0;
  o.zipf_s = 1.0;
  const LoadMatrix loads = synthetic_loads(o, random);
  ASSERT_EQ(loads.layers(), 12u);
  ASSERT_EQ(loads.experts(), 64u);
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    std::vector<double> sorted(loads.layer(l).begin(), loads.layer(l).end());
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    EXPECT_NEAR(std::accumulate(sorted.begin(), sorted.end(), 0.0), 10000.0, 1e-6);
    // Without noise the r-th hottest expert gets exactly 1/r of the hottest's tokens.
    EXPECT_NEAR(sorted[1] / sorted[0], 0.5, 1e-12);
    EXPECT_NEAR(sorted[9] / sorted[0], 0.1, 1e-12);
  }
  o.zipf_s = 0.0;
  const LoadMatrix flat = synthetic_loads(o, random);
  for (double v : flat.values()) EXPECT_NEAR(v, 10000.0 / 64.0, 1e-9);
}

TEST(SyntheticTest, SkewSpreadVariesLayers) {
  SeededRandom random(8);
  SyntheticOptions o = small_options();
  o.noise_sigma = 0.0;
  o.zipf_s = 1.0;
  o.zipf_s_spread = 0.5;
  const LoadMatrix loads = synthetic_loads(o, random);
  double lowest = 1.0;
  double highest = 0.0;
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    std::vector<double> sorted(loads.layer(l).begin(), loads.layer(l).end());
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const double s = -std::log2(sorted[1] / sorted[0]);  // 2^-s = second / first
    EXPECT_GE(s, 0.5 - 1e-9);
    EXPECT_LE(s, 1.5 + 1e-9);
    lowest = std::min(lowest, s);
    highest = std::max(highest, s);
  }
  EXPECT_GT(highest - lowest, 0.3);
}

TEST(SyntheticTest, AdjacentLayersShareHotExperts) {
  SeededRandom random(3);
  SyntheticOptions o = small_options();
  o.layers = 40;
  o.experts = 128;
  o.layer_correlation = 0.9;
  const LoadMatrix loads = synthetic_loads(o, random);
  double adjacent = 0.0;
  double far = 0.0;
  for (std::size_t l = 0; l + 20 < loads.layers(); ++l) {
    adjacent += log_correlation(loads.layer(l), loads.layer(l + 1));
    far += log_correlation(loads.layer(l), loads.layer(l + 20));
  }
  EXPECT_GT(adjacent / 20.0, 0.6);
  EXPECT_LT(far / 20.0, 0.4);
}

TEST(SyntheticTest, DriftChangesHotExpertsGradually) {
  SeededRandom random(5);
  SyntheticOptions o = small_options();
  o.drift = 0.2;
  LoadGenerator generator(o, random);
  const LoadMatrix w0 = generator.next();
  const LoadMatrix w1 = generator.next();
  LoadMatrix last = w1;
  for (int i = 0; i < 30; ++i) last = generator.next();
  const double near = log_correlation(w0.layer(0), w1.layer(0));
  const double distant = log_correlation(w0.layer(0), last.layer(0));
  EXPECT_NE(w0.values(), w1.values());
  EXPECT_GT(near, 0.8);
  EXPECT_LT(distant, near);

  SeededRandom frozen_random(5);
  o.drift = 0.0;
  o.noise_sigma = 0.0;
  LoadGenerator frozen(o, frozen_random);
  EXPECT_EQ(frozen.next().values(), frozen.next().values());
}

}  // namespace
}  // namespace omni::placement
