#include "omni/proxy/tenant_limits.hpp"

#include <gtest/gtest.h>

namespace omni::proxy {
namespace {

using namespace std::chrono_literals;

TEST(TenantLimiter, ConcurrencyIsCountedUntilEachRequestEnds) {
  ManualClock clock;
  TenantLimiter limiter;
  limiter.configure({TenantLimit{2, 0, 0}}, clock.now());
  EXPECT_FALSE(limiter.admit(1, 10, clock.now()));
  EXPECT_FALSE(limiter.admit(1, 10, clock.now()));
  const auto third = limiter.admit(1, 10, clock.now());
  ASSERT_TRUE(third);
  EXPECT_EQ(third->reason, "concurrency");
  EXPECT_EQ(limiter.in_flight(1), 2u);
  limiter.finish(1, 5, clock.now());
  EXPECT_FALSE(limiter.admit(1, 10, clock.now()));
  EXPECT_FALSE(limiter.admit(0, 10, clock.now())) << "no tenant: no limit";
  EXPECT_FALSE(limiter.admit(7, 10, clock.now())) << "an unknown tenant has no limit";
}

TEST(TenantLimiter, TheBucketGoesIntoDebtAndSaysWhenItIsRepaid) {
  ManualClock clock;
  TenantLimiter limiter;
  limiter.configure({TenantLimit{0, 100, 500}}, clock.now());
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), 500);
  EXPECT_FALSE(limiter.admit(1, 800, clock.now())) << "a prompt longer than the bucket passes";
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), -300);
  const auto refused = limiter.admit(1, 1, clock.now());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, "tokens");
  EXPECT_EQ(refused->retry_after, 3s) << "300 tokens of debt at 100 a second";
  limiter.finish(1, 200, clock.now());  // the completion is charged when it ends
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), -500);
  clock.advance(5s);
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), 0);
  EXPECT_TRUE(limiter.admit(1, 1, clock.now())) << "empty is not enough";
  clock.advance(1s);
  EXPECT_FALSE(limiter.admit(1, 1, clock.now()));
  clock.advance(3600s);
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), 500) << "never above the burst";
}

TEST(TenantLimiter, AReloadKeepsCountsAndLevels) {
  ManualClock clock;
  TenantLimiter limiter;
  limiter.configure({TenantLimit{1, 10, 0}}, clock.now());
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), 100) << "default burst: 10 s";
  EXPECT_FALSE(limiter.admit(1, 150, clock.now()));
  limiter.configure({TenantLimit{1, 10, 50}, TenantLimit{}}, clock.now());
  EXPECT_EQ(limiter.in_flight(1), 1u);
  EXPECT_DOUBLE_EQ(limiter.tokens(1, clock.now()), -50);
  EXPECT_TRUE(limiter.admit(1, 1, clock.now()));
  EXPECT_FALSE(limiter.admit(2, 1, clock.now()));
}

}  // namespace
}  // namespace omni::proxy
