#include "omni/cluster/traffic_class.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace omni::cluster {
namespace {

std::vector<TrafficClass> two_classes(double a, double b) {
  return {TrafficClass{"a", a, 0, 0, 1.0}, TrafficClass{"b", b, 1, 0, 1.0}};
}

TEST(TrafficClassOf, FollowsTheShares) {
  const auto classes = two_classes(0.2, 0.8);
  std::size_t first = 0;
  const std::size_t n = 20000;
  for (std::uint64_t id = 0; id < n; ++id) first += class_of_request(classes, 3, id) == 0;
  // Binomial(20000, 0.2): sd 57; 4 sd either side.
  EXPECT_NEAR(static_cast<double>(first), 0.2 * n, 230.0);
  // Relative shares: 10:1 is 1/11 for the second.
  const auto ten_to_one = two_classes(10, 1);
  std::size_t second = 0;
  for (std::uint64_t id = 0; id < n; ++id) second += class_of_request(ten_to_one, 3, id) == 1;
  EXPECT_NEAR(static_cast<double>(second), n / 11.0, 160.0);
}

TEST(TrafficClassOf, IsAPureFunctionOfSeedAndId) {
  const auto classes = two_classes(1, 1);
  std::vector<std::size_t> a, b, other_seed;
  for (std::uint64_t id = 0; id < 512; ++id) {
    a.push_back(class_of_request(classes, 11, id));
    b.push_back(class_of_request(classes, 11, id));
    other_seed.push_back(class_of_request(classes, 12, id));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other_seed);
  // One class (or none): always 0.
  EXPECT_EQ(class_of_request({TrafficClass{"only", 1, 0, 0, 1}}, 5, 99), 0u);
  EXPECT_EQ(class_of_request({}, 5, 99), 0u);
}

TEST(TrafficBandsFlag, ParsesEveryOption) {
  auto bands = parse_traffic_bands(
      "high:-1, low:0:sheddable:weight=0.5:timeout=2.5:max-waiting=40:share=0.75");
  ASSERT_TRUE(bands.ok()) << bands.error().message;
  ASSERT_EQ(bands->size(), 2u);
  EXPECT_EQ((*bands)[0].name, "high");
  EXPECT_EQ((*bands)[0].max_priority, -1);
  EXPECT_FALSE((*bands)[0].sheddable);
  EXPECT_EQ((*bands)[1].name, "low");
  EXPECT_TRUE((*bands)[1].sheddable);
  EXPECT_DOUBLE_EQ((*bands)[1].weight, 0.5);
  EXPECT_EQ((*bands)[1].queue_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ((*bands)[1].max_waiting, 40u);
  EXPECT_DOUBLE_EQ((*bands)[1].node_share, 0.75);
  EXPECT_DOUBLE_EQ((*bands)[0].node_share, 1.0);
  auto none = parse_traffic_bands("");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(TrafficBandsFlag, RejectsBadValuesWithTheItem) {
  for (const char* text :
       {"high", "high:x", "high:0,low:0", "a:0,a:1", "low:0:shed", "low:0:weight=0",
        "low:0:timeout=-1", "low:0:max-waiting=-3", "low:0:share=0", "low:0:share=1.5"}) {
    auto bands = parse_traffic_bands(text);
    ASSERT_FALSE(bands.ok()) << text;
    EXPECT_EQ(bands.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(bands.error().message.find("--traffic-bands"), std::string::npos) << text;
  }
}

TEST(TrafficClassesFlag, ParsesBandsTenantsAndWeights) {
  auto bands = parse_traffic_bands("high:-1,low:0:sheddable");
  ASSERT_TRUE(bands.ok());
  auto classes = parse_traffic_classes(
      "interactive:0.2:band=high:tenant=acme:weight=2,batch:0.8:band=low:tenant=zeta,"
      "default:1,more-acme:1:tenant=acme:weight=2:share=0.5",
      *bands);
  ASSERT_TRUE(classes.ok()) << classes.error().message;
  ASSERT_EQ(classes->size(), 4u);
  EXPECT_EQ((*classes)[0], (TrafficClass{"interactive", 0.2, 0, 1, 2.0}));
  EXPECT_EQ((*classes)[1], (TrafficClass{"batch", 0.8, 1, 2, 1.0}));
  // No band: the band of priority 0, as a request without a priority in omni-proxy.
  EXPECT_EQ((*classes)[2], (TrafficClass{"default", 1, 1, 0, 1.0}));
  EXPECT_EQ((*classes)[3].tenant, 1u);
  EXPECT_DOUBLE_EQ((*classes)[3].tenant_node_share, 0.5);
  EXPECT_DOUBLE_EQ((*classes)[0].tenant_node_share, 1.0);
}

TEST(TrafficClassesFlag, RejectsBadValues) {
  auto bands = parse_traffic_bands("high:-1,low:0");
  ASSERT_TRUE(bands.ok());
  for (const char* text :
       {"a", "a:0", "a:-1", "a:x", "a:1:band=nope", "a:1:weight=2", "a:1:tenant=t:weight=0",
        "a:1,a:2", "a:1:colour=red", "a:1:band", "a:1:tenant=t:weight=2,b:1:tenant=t:weight=3",
        "a:1:share=0.5", "a:1:tenant=t:share=0", "a:1:tenant=t:share=2"}) {
    auto classes = parse_traffic_classes(text, *bands);
    ASSERT_FALSE(classes.ok()) << text;
    EXPECT_NE(classes.error().message.find("--traffic-classes"), std::string::npos) << text;
  }
  // A band name without --traffic-bands says there are none.
  auto no_bands = parse_traffic_classes("a:1:band=high", {});
  ASSERT_FALSE(no_bands.ok());
  EXPECT_NE(no_bands.error().message.find("none"), std::string::npos);
}

}  // namespace
}  // namespace omni::cluster
