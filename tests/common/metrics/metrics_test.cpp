#include "omni/metrics/metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace omni::metrics {
namespace {

template <class T>
T* must(Result<T*> result) {
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().to_string());
  return result.ok() ? result.value() : nullptr;
}

TEST(Exposition, CounterGaugeHistogramWithLabelsAndEscaping) {
  Registry registry;
  auto* requests = must(
      registry.counter("omni_requests_total", "Requests \\ handled\nby route", {"method", "path"}));
  auto* in_flight = must(registry.gauge("omni_in_flight", "In-flight \"requests\""));
  auto* latency =
      must(registry.histogram("omni_latency_seconds", "Latency", {"route"}, {0.25, 0.5, 1}));

  must(requests->with({"GET", "/v1/\"chat\"\n\\x"}))->inc(3);
  must(requests->with({"POST", "/v1/completions"}))->inc();
  in_flight->with({}).value()->set(-2.5);
  Histogram* chat = must(latency->with({"chat"}));
  chat->observe(0.25);  // on a bound: bounds are inclusive
  chat->observe(0.5);
  chat->observe(2);

  EXPECT_EQ(registry.expose(),
            "# HELP omni_in_flight In-flight \"requests\"\n"
            "# TYPE omni_in_flight gauge\n"
            "omni_in_flight -2.5\n"
            "# HELP omni_latency_seconds Latency\n"
            "# TYPE omni_latency_seconds histogram\n"
            "omni_latency_seconds_bucket{route=\"chat\",le=\"0.25\"} 1\n"
            "omni_latency_seconds_bucket{route=\"chat\",le=\"0.5\"} 2\n"
            "omni_latency_seconds_bucket{route=\"chat\",le=\"1\"} 2\n"
            "omni_latency_seconds_bucket{route=\"chat\",le=\"+Inf\"} 3\n"
            "omni_latency_seconds_sum{route=\"chat\"} 2.75\n"
            "omni_latency_seconds_count{route=\"chat\"} 3\n"
            "# HELP omni_requests_total Requests \\\\ handled\\nby route\n"
            "# TYPE omni_requests_total counter\n"
            "omni_requests_total{method=\"GET\",path=\"/v1/\\\"chat\\\"\\n\\\\x\"} 3\n"
            "omni_requests_total{method=\"POST\",path=\"/v1/completions\"} 1\n");
}

TEST(Exposition, UnlabelledFamiliesStartAtZeroAndUnusedLabelledOnesAreHidden) {
  Registry registry;
  must(registry.counter("a_total", "A"));
  must(registry.counter("b_total", "B", {"kind"}));
  must(registry.histogram("c_seconds", "C", {}, {1}));
  EXPECT_EQ(registry.expose(),
            "# HELP a_total A\n# TYPE a_total counter\na_total 0\n"
            "# HELP c_seconds C\n# TYPE c_seconds histogram\n"
            "c_seconds_bucket{le=\"1\"} 0\nc_seconds_bucket{le=\"+Inf\"} 0\n"
            "c_seconds_sum 0\nc_seconds_count 0\n");
}

TEST(Exposition, ValuesUseFormsPrometheusParses) {
  struct Case {
    double value;
    const char* text;
  };
  const Case cases[] = {
      {0, "0"},
      {-0.0, "0"},
      {42, "42"},
      {-7, "-7"},
      {0.1, "0.1"},
      {1.5e-7, "1.5e-07"},
      {1e20, "1e+20"},
      {9007199254740991.0, "9007199254740991"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
  };
  for (const Case& c : cases) {
    Registry registry;
    must(registry.gauge("g", "G"))->with({}).value()->set(c.value);
    EXPECT_EQ(registry.expose(), std::string("# HELP g G\n# TYPE g gauge\ng ") + c.text + "\n")
        << c.text;
  }
}

TEST(Exposition, ChildrenAreOrderedByLabelValues) {
  Registry registry;
  auto* family = must(registry.gauge("g", "G", {"k"}));
  for (const char* key : {"b", "c", "a"}) must(family->with({key}))->set(1);
  EXPECT_EQ(registry.expose(),
            "# HELP g G\n# TYPE g gauge\ng{k=\"a\"} 1\ng{k=\"b\"} 1\n"
            "g{k=\"c\"} 1\n");
}

TEST(Histogram, BucketsAreInclusiveUpperBoundsAndCumulative) {
  auto bounds = std::make_shared<const std::vector<double>>(std::vector<double>{1, 2, 4});
  Histogram h(bounds);
  for (double v : {-3.0, 1.0, 1.0000001, 2.0, 3.9, 4.0, 4.5, 1e300}) h.observe(v);
  const Histogram::Snapshot snap = h.snapshot();
  EXPECT_EQ(snap.cumulative, (std::vector<std::uint64_t>{2, 4, 6, 8}));
  EXPECT_EQ(snap.count, 8u);
  EXPECT_DOUBLE_EQ(snap.sum, -3.0 + 1.0 + 1.0000001 + 2.0 + 3.9 + 4.0 + 4.5 + 1e300);
}

TEST(Histogram, NanCountsOnlyInTheInfBucket) {
  Histogram h(std::make_shared<const std::vector<double>>(std::vector<double>{1}));
  h.observe(std::numeric_limits<double>::quiet_NaN());
  const Histogram::Snapshot snap = h.snapshot();
  EXPECT_EQ(snap.cumulative, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_TRUE(std::isnan(snap.sum));
}

TEST(Buckets, ExponentialLinearAndDefault) {
  EXPECT_EQ(exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_TRUE(exponential_buckets(0, 2, 4).empty());
  EXPECT_TRUE(exponential_buckets(1, 1, 4).empty());
  EXPECT_EQ(linear_buckets(0, 5, 3), (std::vector<double>{0, 5, 10}));
  EXPECT_TRUE(linear_buckets(0, 0, 3).empty());
  const auto latency = default_latency_buckets();
  ASSERT_EQ(latency.size(), 16u);
  EXPECT_DOUBLE_EQ(latency.front(), 0.001);
  EXPECT_DOUBLE_EQ(latency.back(), 32.768);
}

TEST(Registration, RejectsInvalidNames) {
  Registry registry;
  for (const char* name : {"", "1abc", "a-b", "a b", "é"}) {
    auto result = registry.counter(name, "h");
    ASSERT_FALSE(result.ok()) << name;
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE(registry.counter("ns:sub_total", "colons are fine in metric names").ok());
  for (const char* label : {"__reserved", "has:colon", "9lives", ""}) {
    EXPECT_FALSE(registry.gauge("g", "h", {label}).ok()) << label;
  }
  EXPECT_FALSE(registry.gauge("g", "h", {"a", "a"}).ok());
  EXPECT_FALSE(registry.histogram("h", "h", {"le"}, {1}).ok());
  EXPECT_TRUE(registry.counter("c_total", "le is only reserved on histograms", {"le"}).ok());
}

TEST(Registration, RejectsBadBounds) {
  Registry registry;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(registry.histogram("h1", "h", {}, {1, 1}).ok());
  EXPECT_FALSE(registry.histogram("h2", "h", {}, {2, 1}).ok());
  EXPECT_FALSE(registry.histogram("h3", "h", {}, {std::nan(""), 1}).ok());
  EXPECT_FALSE(registry.histogram("h4", "h", {}, {-inf, 1}).ok());
  auto with_inf = registry.histogram("h5", "h", {}, {1, inf});
  ASSERT_TRUE(with_inf.ok());
  EXPECT_EQ(with_inf.value()->bounds(), (std::vector<double>{1}));
}

TEST(Registration, SameDefinitionReturnsTheFamilyAndAnotherOneIsAnError) {
  Registry registry;
  auto* first = must(registry.counter("x_total", "X", {"a"}));
  EXPECT_EQ(must(registry.counter("x_total", "X", {"a"})), first);
  EXPECT_FALSE(registry.counter("x_total", "other help", {"a"}).ok());
  EXPECT_FALSE(registry.counter("x_total", "X", {"b"}).ok());
  EXPECT_FALSE(registry.gauge("x_total", "X", {"a"}).ok());
  EXPECT_FALSE(registry.counter_callback("x_total", "X", {"a"}, [](Emitter&) {}).ok());

  auto* h = must(registry.histogram("lat", "L", {}, {1, 2}));
  EXPECT_EQ(must(registry.histogram("lat", "L", {}, {1, 2})), h);
  EXPECT_FALSE(registry.histogram("lat", "L", {}, {1, 3}).ok());
}

TEST(Registration, HistogramSeriesNamesAreTaken) {
  Registry registry;
  must(registry.histogram("lat", "L", {}, {1}));
  EXPECT_FALSE(registry.counter("lat_count", "c").ok());
  EXPECT_FALSE(registry.gauge("lat_sum", "s").ok());
  EXPECT_FALSE(registry.gauge_callback("lat_bucket", "b", {}, [](Emitter&) {}).ok());
  must(registry.gauge("size_sum", "s"));
  EXPECT_FALSE(registry.histogram("size", "S", {}, {1}).ok());
}

TEST(Family, WithReturnsStableChildrenAndRejectsWrongLabelCounts) {
  Registry registry;
  auto* family = must(registry.counter("c_total", "C", {"a", "b"}));
  Counter* child = must(family->with({"1", "2"}));
  const std::vector<std::string> same{"1", "2"};
  EXPECT_EQ(must(family->with(same)), child);
  for (int i = 0; i < 100; ++i) must(family->with({std::to_string(i), "x"}));
  EXPECT_EQ(must(family->with({"1", "2"})), child);

  auto wrong = family->with({"only-one"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(family->with({"1", "2", "3"}).ok());
}

TEST(Counter, AddsWholeAndFractionalAmountsAndIgnoresNegativeOrNan) {
  Counter counter;
  counter.inc(2);
  counter.inc(-1);
  counter.inc(std::numeric_limits<double>::quiet_NaN());
  counter.inc(0.5);
  EXPECT_EQ(counter.value(), 2.5);
  counter.inc(1e20);  // too large for the integer cell: kept as a double
  EXPECT_EQ(counter.value(), 1e20 + 2.5);
}

TEST(Gauge, SetIncDec) {
  Gauge gauge;
  gauge.set(10);
  gauge.inc();
  gauge.dec(3.5);
  EXPECT_EQ(gauge.value(), 7.5);
}

TEST(Concurrency, UpdatesFromFourThreadsSumExactly) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100'000;
  constexpr std::uint64_t kTotal = std::uint64_t{kThreads} * kPerThread;
  Registry registry;
  Counter* whole = must(must(registry.counter("c_total", "C", {"k"}))->with({"x"}));
  Counter* halves = must(must(registry.counter("c_total", "C", {"k"}))->with({"y"}));
  Gauge* gauge = must(must(registry.gauge("g", "G"))->with({}));
  Histogram* histogram = must(must(registry.histogram("h", "H", {}, {0.5, 1.5}))->with({}));
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        whole->inc();
        halves->inc(0.5);  // the compare-and-swap path; sums of halves are exact
        gauge->inc(2);
        gauge->dec();
        histogram->observe(t % 2);  // threads 0,2 observe 0; threads 1,3 observe 1
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(whole->value(), static_cast<double>(kTotal));
  EXPECT_EQ(halves->value(), static_cast<double>(kTotal) / 2);
  EXPECT_EQ(gauge->value(), static_cast<double>(kTotal));
  const Histogram::Snapshot snap = histogram->snapshot();
  constexpr std::uint64_t kHalf = kTotal / 2;
  EXPECT_EQ(snap.cumulative, (std::vector<std::uint64_t>{kHalf, 2 * kHalf, 2 * kHalf}));
  EXPECT_EQ(snap.sum, static_cast<double>(kHalf));
}

TEST(Callbacks, ReportCurrentValuesSortedAtEveryScrape) {
  Registry registry;
  std::uint64_t requests = 5;
  ASSERT_TRUE(registry
                  .counter_callback("srv_requests_total", "Requests", {},
                                    [&](Emitter& e) { e.emit({}, static_cast<double>(requests)); })
                  .ok());
  ASSERT_TRUE(registry
                  .gauge_callback("srv_queue", "Queue depth", {"queue"},
                                  [](Emitter& e) {
                                    e.emit({"zeta"}, 2);
                                    e.emit({"alpha"}, 1);
                                    e.emit({"too", "many"}, 9);  // dropped
                                  })
                  .ok());
  const std::string expected_tail =
      "# HELP srv_queue Queue depth\n# TYPE srv_queue gauge\n"
      "srv_queue{queue=\"alpha\"} 1\nsrv_queue{queue=\"zeta\"} 2\n";
  const std::string requests_head =
      "# HELP srv_requests_total Requests\n# TYPE srv_requests_total counter\n";
  EXPECT_EQ(registry.expose(), expected_tail + requests_head + "srv_requests_total 5\n");
  requests = 6;
  EXPECT_EQ(registry.expose(), expected_tail + requests_head + "srv_requests_total 6\n");
}

TEST(Callbacks, NothingEmittedMeansNoFamilyAndEmptyFunctionIsAnError) {
  Registry registry;
  ASSERT_TRUE(registry.gauge_callback("quiet", "Q", {}, [](Emitter&) {}).ok());
  EXPECT_EQ(registry.expose(), "");
  EXPECT_FALSE(registry.gauge_callback("none", "N", {}, CollectFn{}).ok());
}

TEST(Callbacks, MayUseTheRegistryWhileScraped) {
  Registry registry;
  ASSERT_TRUE(registry
                  .gauge_callback("families", "F", {},
                                  [&](Emitter& e) {
                                    auto counter = registry.counter("late_total", "L");
                                    e.emit({}, counter.ok() ? 1 : 0);
                                  })
                  .ok());
  EXPECT_NE(registry.expose().find("families 1\n"), std::string::npos);
  EXPECT_NE(registry.expose().find("late_total 0\n"), std::string::npos);
}

}  // namespace
}  // namespace omni::metrics
