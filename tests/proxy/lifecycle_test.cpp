#include "omni/proxy/lifecycle.hpp"

#include <gtest/gtest.h>

namespace omni::proxy {
namespace {

using std::chrono::milliseconds;

TEST(ProxyLifecycle, StagesTimesAndTokenLatencies) {
  const TimePoint t0{milliseconds(1000)};
  Lifecycle life;
  life.mark(Stage::kReceived, t0);
  life.mark(Stage::kWaitingPrefill, t0 + milliseconds(1));
  life.mark(Stage::kPrefilling, t0 + milliseconds(3));
  life.mark(Stage::kDecoding, t0 + milliseconds(40));
  EXPECT_EQ(life.stage(), Stage::kDecoding);
  EXPECT_EQ(life.time_in(Stage::kReceived), milliseconds(1));
  EXPECT_EQ(life.time_in(Stage::kWaitingPrefill), milliseconds(2));  // skips unmarked stages
  EXPECT_EQ(life.time_in(Stage::kPrefilling), milliseconds(37));
  EXPECT_FALSE(life.time_in(Stage::kDecoding).has_value());  // nothing after it yet
  EXPECT_FALSE(life.time_in(Stage::kTokenized).has_value());
  EXPECT_FALSE(life.ttft().has_value());
  life.output_event(t0 + milliseconds(50));
  EXPECT_FALSE(life.tpot().has_value());
  life.output_event(t0 + milliseconds(60), 2);
  life.output_event(t0 + milliseconds(80));
  EXPECT_EQ(life.ttft(), milliseconds(50));
  EXPECT_EQ(life.output_tokens(), 4u);
  EXPECT_EQ(life.tpot(), milliseconds(10));  // 30 ms over 3 gaps
  EXPECT_EQ(stage_name(Stage::kPrefixMatched), "prefix_matched");
}

}  // namespace
}  // namespace omni::proxy
