#include "omni/cluster/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace omni::cluster {
namespace {

constexpr double kSmallest = 1e-6;      // values below count as this
constexpr double kGrowth = 1.01;        // bucket i covers [kSmallest*g^i, kSmallest*g^(i+1))
constexpr std::size_t kBuckets = 2800;  // up to ~1.2e6

}  // namespace

LogHistogram::LogHistogram() : buckets_(kBuckets, 0) {}

std::size_t LogHistogram::bucket_of(double value) const {
  if (!(value > kSmallest)) return 0;
  const double index = std::log(value / kSmallest) / std::log(kGrowth);
  return std::min(static_cast<std::size_t>(index), kBuckets - 1);
}

double LogHistogram::bucket_value(std::size_t bucket) const {
  // The geometric middle of the bucket: at most half a bucket (0.5%) from any value in it.
  return kSmallest * std::pow(kGrowth, static_cast<double>(bucket) + 0.5);
}

void LogHistogram::add(double value, std::uint64_t count) {
  if (count == 0 || std::isnan(value)) return;
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  count_ += count;
  sum_ += value * static_cast<double>(count);
  buckets_[bucket_of(value)] += count;
}

double LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  // The nearest-rank definition: the smallest value with at least q of the mass at or below it.
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(bucket_value(i), min_, max_);
  }
  return max_;
}

void LogHistogram::merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
  for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
}

std::vector<std::pair<double, double>> LogHistogram::cdf() const {
  std::vector<std::pair<double, double>> points;
  if (count_ == 0) return points;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i] == 0) continue;
    seen += buckets_[i];
    points.emplace_back(std::clamp(bucket_value(i), min_, max_),
                        static_cast<double>(seen) / static_cast<double>(count_));
  }
  return points;
}

}  // namespace omni::cluster
