// A small Prometheus client: a Registry of metric families and their text exposition.
//
//   Registry ── families, sorted by name ─┬─ Family<Counter>   ─ children by label values
//                                         ├─ Family<Gauge>       (std::map, so scrapes are
//                                         ├─ Family<Histogram>    deterministic)
//                                         └─ callback family ─── fn(Emitter&) at scrape time
//
// Families are registered at start-up; a component asks its family for a child once
// (`family->with({"GET", "200"})`), keeps the pointer and updates it on the hot path.
//
// Threading contract:
//   * Registry and Family methods are thread-safe; they take a mutex, so call them at
//     start-up or when a new label combination first appears, not per update.
//   * Counter, Gauge and Histogram updates are lock-free atomics and safe from any thread.
//     Counters and histograms are sharded: each thread adds into its own cache-line-padded
//     cell, and a scrape sums the cells, so concurrent updates do not contend.
//   * Children and families live as long as their Registry; pointers to them stay valid.
//   * A scrape (expose()) runs callbacks on the scraping thread without holding the
//     registry's lock, so a callback may read anything, even register metrics.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::metrics {

// The Content-Type of expose()'s output (Prometheus text format 0.0.4).
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge", "histogram": the word used on the "# TYPE" line.
std::string_view metric_type_name(MetricType type) noexcept;

namespace detail {

inline constexpr std::size_t kCacheLine = 64;

// Eight 64-bit cells on one cache line, so two shards never share a line.
struct alignas(kCacheLine) CellLine {
  std::atomic<std::uint64_t> cell[kCacheLine / sizeof(std::uint64_t)] = {};
};

// Number of shards per counter/histogram: a power of two fixed for the process' lifetime
// (the hardware thread count rounded up, between 1 and 32).
std::size_t shard_count() noexcept;

// This thread's shard slot; threads are numbered round-robin on first use. Any shard is
// correct for any thread (a coroutine moving threads just lands in another cell).
inline std::size_t this_thread_slot() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t slot = next.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

// Doubles are kept as their bit patterns in 64-bit atomics (one cell type for counts and
// sums). Adding is a compare-and-swap loop; on a thread's own shard it succeeds first time.
inline void add_double(std::atomic<std::uint64_t>& cell, double delta) noexcept {
  std::uint64_t seen = cell.load(std::memory_order_relaxed);
  while (!cell.compare_exchange_weak(
      seen, std::bit_cast<std::uint64_t>(std::bit_cast<double>(seen) + delta),
      std::memory_order_relaxed)) {
  }
}
inline double load_double(const std::atomic<std::uint64_t>& cell) noexcept {
  return std::bit_cast<double>(cell.load(std::memory_order_relaxed));
}

}  // namespace detail

// A monotonically increasing value. inc() with a negative or NaN amount is ignored: a
// counter never goes down.
class Counter {
 public:
  Counter();
  void inc(double amount = 1.0) noexcept {
    if (!(amount >= 0.0)) return;
    auto& line = lines_[detail::this_thread_slot() & mask_];
    // Whole amounts (the usual +1) take a plain atomic add, about twice as cheap as the
    // compare-and-swap loop a fractional amount needs.
    if (amount < kExactIntegerLimit) {
      const auto whole = static_cast<std::uint64_t>(amount);
      if (static_cast<double>(whole) == amount) {
        line.cell[kWholeCell].fetch_add(whole, std::memory_order_relaxed);
        return;
      }
    }
    detail::add_double(line.cell[kFractionCell], amount);
  }
  // The sum over all shards; exact once concurrent increments have finished.
  double value() const noexcept;

 private:
  static constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
  static constexpr std::size_t kWholeCell = 0;     // integer increments, as an integer
  static constexpr std::size_t kFractionCell = 1;  // other increments, as a double's bits
  std::unique_ptr<detail::CellLine[]> lines_;      // one line per shard
  std::size_t mask_;
};

// A value that goes up and down. One atomic cell: set() must be a single writer's word, so a
// gauge is not sharded.
class Gauge {
 public:
  void set(double value) noexcept {
    bits_.store(std::bit_cast<std::uint64_t>(value), std::memory_order_relaxed);
  }
  void inc(double amount = 1.0) noexcept { detail::add_double(bits_, amount); }
  void dec(double amount = 1.0) noexcept { detail::add_double(bits_, -amount); }
  double value() const noexcept { return detail::load_double(bits_); }

 private:
  std::atomic<std::uint64_t> bits_{0};  // +0.0
};

// Observations counted into buckets with inclusive upper bounds (le), plus their sum.
// A NaN observation counts only in the +Inf bucket (and makes the sum NaN).
class Histogram {
 public:
  // `bounds`: finite, strictly increasing (validated by Registry::histogram).
  explicit Histogram(std::shared_ptr<const std::vector<double>> bounds);

  void observe(double value) noexcept;

  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0.0;
    std::uint64_t count = 0;
  };
  // Cell-by-cell sums; consistent (count == +Inf bucket) even while others observe.
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const noexcept { return *bounds_; }

 private:
  std::size_t bucket_of(double value) const noexcept;
  std::atomic<std::uint64_t>& cell(std::size_t shard, std::size_t index) const noexcept;

  std::shared_ptr<const std::vector<double>> bounds_;
  std::size_t cells_per_shard_;  // bounds + 1 (+Inf) bucket counts, then the sum
  std::size_t lines_per_shard_;
  std::size_t mask_;
  std::unique_ptr<detail::CellLine[]> lines_;
};

// Buckets start, start*factor, ... (count of them). Empty if the arguments make no sense
// (start <= 0, factor <= 1, count == 0).
std::vector<double> exponential_buckets(double start, double factor, std::size_t count);
// Buckets start, start+width, ... (count of them). Empty if width <= 0 or count == 0.
std::vector<double> linear_buckets(double start, double width, std::size_t count);
// Request latencies in seconds, 1 ms .. ~33 s, doubling: 0.001, 0.002, ..., 32.768.
std::vector<double> default_latency_buckets();

// What every family has: its name, help, type and label names.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::string& help() const noexcept { return help_; }
  MetricType type() const noexcept { return type_; }
  const std::vector<std::string>& label_names() const noexcept { return label_names_; }

  // Appends this family's samples (no HELP/TYPE lines) in the text format; appends
  // nothing for a labelled family that has no children yet.
  virtual void append_samples(std::string& out) const = 0;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// A family of one metric type; its children are keyed by label values.
template <class Metric>
class Family final : public FamilyBase {
 public:
  // The child for these label values (in the order of label_names()), created on first
  // use. Error kInvalidArgument if the number of values is wrong. The pointer is stable.
  Result<Metric*> with(std::initializer_list<std::string_view> label_values);
  Result<Metric*> with(std::span<const std::string> label_values);

  void append_samples(std::string& out) const override;
  // Histograms only: the bucket bounds every child shares (empty for other types).
  const std::vector<double>& bounds() const noexcept { return *bounds_; }

 private:
  friend class Registry;
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::vector<double> bounds);
  Result<Metric*> child(std::vector<std::string> key);

  std::shared_ptr<const std::vector<double>> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Collects the samples of a callback-backed family during a scrape.
class Emitter {
 public:
  explicit Emitter(std::size_t label_count) : label_count_(label_count) {}
  // One sample; values in the order of the family's label names. A sample with the wrong
  // number of label values is dropped (counted in dropped()), never a crash.
  void emit(std::initializer_list<std::string_view> label_values, double value);
  void emit(std::span<const std::string> label_values, double value);

  struct Sample {
    std::vector<std::string> label_values;
    double value;
  };
  std::vector<Sample>& samples() noexcept { return samples_; }
  std::size_t dropped() const noexcept { return dropped_; }

 private:
  std::size_t label_count_;
  std::vector<Sample> samples_;
  std::size_t dropped_ = 0;
};

// Called at scrape time to report current values, e.g. from a stats() snapshot:
//   [&server](Emitter& e) { e.emit({}, double(server.stats().requests)); }
using CollectFn = std::function<void(Emitter&)>;

class Registry {
 public:
  Registry() = default;
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registration. Errors (kInvalidArgument): a name outside [a-zA-Z_:][a-zA-Z0-9_:]*, a
  // label name outside [a-zA-Z_][a-zA-Z0-9_]* or starting with "__", a repeated label name,
  // "le" on a histogram, bounds not strictly increasing or not finite (a trailing +Inf is
  // allowed and dropped), or the name already taken by a different definition (another
  // type, help, label names or bounds, or a histogram's _bucket/_sum/_count series).
  // Registering the same definition again returns the existing family.
  Result<CounterFamily*> counter(std::string_view name, std::string_view help,
                                 std::vector<std::string> label_names = {});
  Result<GaugeFamily*> gauge(std::string_view name, std::string_view help,
                             std::vector<std::string> label_names = {});
  Result<HistogramFamily*> histogram(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names,
                                     std::vector<double> bounds);

  // Callback-backed families: `collect` runs at every scrape. The same name twice is an
  // error (two functions cannot be compared).
  Status counter_callback(std::string_view name, std::string_view help,
                          std::vector<std::string> label_names, CollectFn collect);
  Status gauge_callback(std::string_view name, std::string_view help,
                        std::vector<std::string> label_names, CollectFn collect);

  // The whole registry in the text format, families sorted by name, children by label values.
  std::string expose() const;
  void expose_to(std::string& out) const;

 private:
  template <class Metric>
  Result<Family<Metric>*> add_family(std::string_view name, std::string_view help, MetricType type,
                                     std::vector<std::string> label_names,
                                     std::vector<double> bounds);
  Status add_callback(std::string_view name, std::string_view help, MetricType type,
                      std::vector<std::string> label_names, CollectFn collect);
  Status check_name_free(std::string_view name, MetricType type) const;  // mu_ held

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

}  // namespace omni::metrics
