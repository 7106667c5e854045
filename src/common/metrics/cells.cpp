// Counter, Gauge and Histogram storage: per-thread shards on their own cache lines.
#include <algorithm>
#include <bit>
#include <cmath>
#include <thread>

#include "omni/metrics/metrics.hpp"

namespace omni::metrics {
namespace detail {

std::size_t shard_count() noexcept {
  static const std::size_t count = [] {
    constexpr std::size_t kMaxShards = 32;
    const std::size_t threads = std::max<std::size_t>(1, std::thread::hardware_concurrency());
    return std::min(kMaxShards, std::bit_ceil(threads));
  }();
  return count;
}

}  // namespace detail

namespace {
constexpr std::size_t kCellsPerLine = sizeof(detail::CellLine) / sizeof(std::uint64_t);
}  // namespace

std::string_view metric_type_name(MetricType type) noexcept {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

Counter::Counter()
    : lines_(new detail::CellLine[detail::shard_count()]), mask_(detail::shard_count() - 1) {}

double Counter::value() const noexcept {
  double total = 0.0;
  for (std::size_t s = 0; s <= mask_; ++s) {
    total += static_cast<double>(lines_[s].cell[kWholeCell].load(std::memory_order_relaxed));
    total += detail::load_double(lines_[s].cell[kFractionCell]);
  }
  return total;
}

Histogram::Histogram(std::shared_ptr<const std::vector<double>> bounds)
    : bounds_(std::move(bounds)),
      cells_per_shard_(bounds_->size() + 2),
      lines_per_shard_((cells_per_shard_ + kCellsPerLine - 1) / kCellsPerLine),
      mask_(detail::shard_count() - 1),
      lines_(new detail::CellLine[lines_per_shard_ * detail::shard_count()]) {}

std::atomic<std::uint64_t>& Histogram::cell(std::size_t shard, std::size_t index) const noexcept {
  return lines_[shard * lines_per_shard_ + index / kCellsPerLine].cell[index % kCellsPerLine];
}

std::size_t Histogram::bucket_of(double value) const noexcept {
  if (std::isnan(value)) return bounds_->size();  // only +Inf is "greater or equal" to NaN
  // First bound >= value: bounds are inclusive upper limits.
  return static_cast<std::size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), value) -
                                  bounds_->begin());
}

void Histogram::observe(double value) noexcept {
  const std::size_t shard = detail::this_thread_slot() & mask_;
  cell(shard, bucket_of(value)).fetch_add(1, std::memory_order_relaxed);
  detail::add_double(cell(shard, cells_per_shard_ - 1), value);
}

Histogram::Snapshot Histogram::snapshot() const {
  const std::size_t buckets = bounds_->size() + 1;
  Snapshot snap;
  snap.cumulative.assign(buckets, 0);
  for (std::size_t s = 0; s <= mask_; ++s) {
    for (std::size_t b = 0; b < buckets; ++b) {
      snap.cumulative[b] += cell(s, b).load(std::memory_order_relaxed);
    }
    snap.sum += detail::load_double(cell(s, cells_per_shard_ - 1));
  }
  for (std::size_t b = 1; b < buckets; ++b) snap.cumulative[b] += snap.cumulative[b - 1];
  snap.count = snap.cumulative.back();
  return snap;
}

std::vector<double> exponential_buckets(double start, double factor, std::size_t count) {
  std::vector<double> out;
  if (!(start > 0.0) || !(factor > 1.0) || !std::isfinite(start) || !std::isfinite(factor)) {
    return out;
  }
  out.reserve(count);
  double bound = start;
  for (std::size_t i = 0; i < count && std::isfinite(bound); ++i, bound *= factor) {
    out.push_back(bound);
  }
  return out;
}

std::vector<double> linear_buckets(double start, double width, std::size_t count) {
  std::vector<double> out;
  if (!(width > 0.0) || !std::isfinite(start) || !std::isfinite(width)) return out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    // start + i*width rather than repeated addition: no accumulated rounding error.
    out.push_back(start + static_cast<double>(i) * width);
  }
  return out;
}

std::vector<double> default_latency_buckets() { return exponential_buckets(0.001, 2.0, 16); }

}  // namespace omni::metrics
