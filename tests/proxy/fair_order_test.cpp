#include "omni/proxy/fair_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace omni::proxy {
namespace {

FairOrder::Entry entry(std::size_t index, std::uint8_t band, std::uint32_t tenant, double cost,
                       double score = 0, double weight = 1) {
  FairOrder::Entry e;
  e.index = index;
  e.band = band;
  e.tenant = tenant;
  e.cost = cost;
  e.score = score;
  e.weight = weight;
  return e;
}

std::vector<std::size_t> order_of(FairOrder& fair, std::vector<FairOrder::Entry> entries) {
  std::vector<std::size_t> out;
  fair.order(entries, out);
  return out;
}

TEST(FairOrder, OneTenantOneBandKeepsThePolicysOrder) {
  FairOrder fair;
  const auto out = order_of(fair, {entry(0, 0, 0, 5, 3.0), entry(1, 0, 0, 5, 1.0),
                                   entry(2, 0, 0, 5, 2.0), entry(3, 0, 0, 5, 1.0)});
  EXPECT_EQ(out, (std::vector<std::size_t>{1, 3, 2, 0})) << "score, then queue position";
}

TEST(FairOrder, StrictBandsPutEveryUrgentTicketFirst) {
  TrafficOptions options;
  options.bands = {{"high", -1}, {"low", 0}};
  FairOrder fair(options);
  const auto out = order_of(fair, {entry(0, 1, 0, 1, 0.0), entry(1, 0, 0, 1, 9.0),
                                   entry(2, 1, 0, 1, 0.0), entry(3, 0, 0, 1, 8.0)});
  EXPECT_EQ(out, (std::vector<std::size_t>{3, 1, 0, 2}));
}

TEST(FairOrder, TenantsAlternateByCostOverWeight) {
  FairOrder fair;
  // Tenant 1 has six tickets queued first, tenant 2 three: equal costs and weights alternate.
  std::vector<FairOrder::Entry> entries;
  for (std::size_t i = 0; i < 6; ++i) entries.push_back(entry(i, 0, 1, 100, double(i)));
  for (std::size_t i = 6; i < 9; ++i) entries.push_back(entry(i, 0, 2, 100, double(i)));
  EXPECT_EQ(order_of(fair, entries), (std::vector<std::size_t>{0, 6, 1, 7, 2, 8, 3, 4, 5}));
  // Weight 2 for tenant 2: two of its tickets per one of tenant 1's.
  for (auto& e : entries) {
    if (e.tenant == 2) e.weight = 2;
  }
  for (std::size_t i = 9; i < 12; ++i) entries.push_back(entry(i, 0, 2, 100, double(i), 2));
  EXPECT_EQ(order_of(fair, entries),
            (std::vector<std::size_t>{0, 6, 7, 1, 8, 9, 2, 10, 11, 3, 4, 5}));
}

TEST(FairOrder, PlacedTicketsAdvanceTheirTenantsTagAndIdleTenantsSaveNoCredit) {
  FairOrder fair;
  // Tenant 1 alone placed ten tickets: its tag is ahead, but so is the virtual time, so a
  // tenant that arrives now starts level with it (no punishment for past work alone) ...
  for (std::size_t i = 0; i < 10; ++i) fair.placed(entry(i, 0, 1, 100));
  auto out = order_of(
      fair, {entry(0, 0, 1, 100), entry(1, 0, 2, 100), entry(2, 0, 1, 100), entry(3, 0, 2, 100)});
  EXPECT_EQ(out, (std::vector<std::size_t>{1, 0, 3, 2}))
      << "tenant 1's next start is its finish tag (V + 100), tenant 2 starts at V";
  // ... and a tenant that stayed away for a while does not come back with saved-up credit.
  for (std::size_t i = 0; i < 50; ++i) {
    fair.placed(entry(i, 0, 1, 100));
    fair.placed(entry(i, 0, 3, 100));
  }
  out = order_of(fair, {entry(0, 0, 1, 100), entry(1, 0, 1, 100), entry(2, 0, 2, 100),
                        entry(3, 0, 2, 100), entry(4, 0, 2, 100)});
  EXPECT_EQ(out.front(), 2u);
  EXPECT_EQ(out, (std::vector<std::size_t>{2, 0, 3, 1, 4}));
}

TEST(FairOrder, WeightedBandsShareByWeight) {
  TrafficOptions options;
  options.bands = {{"high", -1, 3.0}, {"low", 0, 1.0}};
  options.order = BandOrder::kWeighted;
  FairOrder fair(options);
  std::vector<FairOrder::Entry> entries;
  for (std::size_t i = 0; i < 8; ++i) entries.push_back(entry(i, 0, 0, 10, double(i)));
  for (std::size_t i = 8; i < 12; ++i) entries.push_back(entry(i, 1, 0, 10, double(i)));
  const auto out = order_of(fair, entries);
  // In the first eight placements, three of every four go to the heavier band.
  const auto low =
      std::count_if(out.begin(), out.begin() + 8, [](std::size_t i) { return i >= 8; });
  EXPECT_EQ(low, 2);
  EXPECT_LT(std::find(out.begin(), out.end(), 8u) - out.begin(), 4) << "low is not starved";
}

// SFQ's bound, checked on a long random run: two tenants that stay backlogged, random costs
// and weights, one placement at a time (the first of each pass). At every point the normalised
// work of the two differs by at most cost_max_1/w_1 + cost_max_2/w_2.
TEST(FairOrder, TheFairnessBoundHoldsForBackloggedTenants) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 20; ++trial) {
    FairOrder fair;
    const double w1 = 1 + static_cast<double>(random() % 4);
    const double w2 = 1 + static_cast<double>(random() % 4);
    std::uniform_real_distribution<double> cost(1, 4000);
    std::vector<FairOrder::Entry> queue;
    std::size_t next = 0;
    auto refill = [&] {
      // Each tenant keeps five tickets queued: both stay backlogged.
      for (std::uint32_t tenant : {1u, 2u}) {
        const auto have = std::count_if(queue.begin(), queue.end(),
                                        [&](const auto& e) { return e.tenant == tenant; });
        for (auto i = have; i < 5; ++i) {
          queue.push_back(
              entry(next, 0, tenant, cost(random), double(next), tenant == 1 ? w1 : w2));
          ++next;
        }
      }
    };
    double work1 = 0, work2 = 0, max1 = 0, max2 = 0;
    for (int step = 0; step < 2000; ++step) {
      refill();
      for (const auto& e : queue) {
        double& largest = e.tenant == 1 ? max1 : max2;
        largest = std::max(largest, e.cost);
      }
      std::vector<FairOrder::Entry> copy = queue;
      std::vector<std::size_t> out;
      fair.order(copy, out);
      auto it = std::find_if(queue.begin(), queue.end(),
                             [&](const auto& e) { return e.index == out[0]; });
      ASSERT_NE(it, queue.end());
      fair.placed(*it);
      (it->tenant == 1 ? work1 : work2) += it->cost;
      queue.erase(it);
      const double gap = std::abs(work1 / w1 - work2 / w2);
      ASSERT_LE(gap, max1 / w1 + max2 / w2 + 1e-6) << "trial " << trial << " step " << step;
    }
  }
}

TEST(FairOrder, BandsOfPriorities) {
  const std::vector<BandSpec> bands = {{"interactive", -1}, {"standard", 0}, {"batch", 10}};
  EXPECT_EQ(band_of_priority(bands, -100), 0);
  EXPECT_EQ(band_of_priority(bands, -1), 0);
  EXPECT_EQ(band_of_priority(bands, 0), 1);
  EXPECT_EQ(band_of_priority(bands, 5), 2);
  EXPECT_EQ(band_of_priority(bands, 1000), 2) << "the last band takes everything above";
  EXPECT_EQ(band_of_priority({}, -5), 0);
  EXPECT_EQ(band_name(bands, 2), "batch");
  EXPECT_EQ(band_name({}, 0), "default");
}

TEST(FairOrder, OneCheckOfABandListForTheProxyAndTheSimulator) {
  EXPECT_TRUE(valid_bands({}).ok());
  EXPECT_TRUE(valid_bands({{"high", -1}, {"low", 0}}).ok());
  const std::vector<std::vector<BandSpec>> bad = {
      {{"a", 0}, {"a", 1}},                // a name twice
      {{"high", 0}, {"low", 0}},           // max_priority not growing
      {{"low", 5}, {"high", -1}},          // least urgent first
      {{"", 0}},                           // no name
      {{"a", 0, 0.0}},                     // weight 0
      {{"a", 0, 1.0, false, {}, 0, 0.0}},  // node_share 0
      {{"a", 0, 1.0, false, {}, 0, 1.5}},  // node_share over 1
  };
  for (const auto& bands : bad) {
    const Status status = valid_bands(bands);
    ASSERT_FALSE(status.ok()) << bands.front().name;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  }
  std::vector<BandSpec> many;
  for (std::int64_t i = 0; i <= static_cast<std::int64_t>(kMaxBands); ++i) {
    many.push_back({"b" + std::to_string(i), i});
  }
  EXPECT_FALSE(valid_bands(many).ok()) << "more than kMaxBands";
  many.pop_back();
  EXPECT_TRUE(valid_bands(many).ok());
}

}  // namespace
}  // namespace omni::proxy
