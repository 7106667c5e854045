// A streaming histogram with bounded relative error, so that a million-request simulation keeps
// percentiles in constant memory: values fall in log-spaced buckets (about 0.5% wide) between
// 1 µs and ~10^6 s; the mean and the extremes are exact.
#pragma once

#include <cstdint>
#include <vector>

namespace omni::cluster {

class LogHistogram {
 public:
  LogHistogram();
  void add(double value, std::uint64_t count = 1);
  std::uint64_t count() const { return count_; }
  double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  double min() const { return count_ == 0 ? 0.0 : min_; }
  double max() const { return count_ == 0 ? 0.0 : max_; }
  // q in [0, 1]; the bucket's representative value, clamped to [min, max]. 0 when empty.
  double quantile(double q) const;
  void merge(const LogHistogram& other);
  // Points (value, cumulative fraction) of the distribution, one per non-empty bucket, for plots.
  std::vector<std::pair<double, double>> cdf() const;

 private:
  std::size_t bucket_of(double value) const;
  double bucket_value(std::size_t bucket) const;

  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  double sum_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
};

}  // namespace omni::cluster
