#include "omni/common/clock.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace omni {
namespace {

using namespace std::chrono_literals;

TEST(ManualClock, StartsWhereToldAndAdvances) {
  ManualClock clock(TimePoint{5s});
  EXPECT_EQ(clock.now(), TimePoint{5s});
  clock.advance(250ms);
  EXPECT_EQ(clock.now(), TimePoint{5250ms});
}

TEST(ManualClock, NeverGoesBackwards) {
  ManualClock clock;
  clock.set(TimePoint{10s});
  clock.set(TimePoint{3s});
  EXPECT_EQ(clock.now(), TimePoint{10s});
  clock.advance(-1s);
  EXPECT_EQ(clock.now(), TimePoint{10s});
}

TEST(ManualClock, ConcurrentAdvancesAllCount) {
  ManualClock clock;
  std::thread a([&] {
    for (int i = 0; i < 10000; ++i) clock.advance(1ns);
  });
  std::thread b([&] {
    for (int i = 0; i < 10000; ++i) clock.advance(1ns);
  });
  a.join();
  b.join();
  EXPECT_EQ(clock.now(), TimePoint{20000ns});
}

TEST(SteadyClock, IsMonotonicAndScaled) {
  SteadyClock real;
  SteadyClock fast(1000.0);
  const TimePoint r0 = real.now();
  const TimePoint f0 = fast.now();
  std::this_thread::sleep_for(5ms);
  const Duration real_elapsed = real.now() - r0;
  const Duration fast_elapsed = fast.now() - f0;
  EXPECT_GE(real_elapsed, 5ms);
  // The sped-up clock moved at least 1000x the sleep; no upper bound (machines are noisy).
  EXPECT_GE(fast_elapsed, 5s);
  EXPECT_EQ(fast.speedup(), 1000.0);
}

TEST(SteadyClock, NonPositiveSpeedupMeansRealTime) {
  SteadyClock clock(0.0);
  EXPECT_EQ(clock.speedup(), 1.0);
}

TEST(Seconds, RoundTrip) {
  EXPECT_DOUBLE_EQ(to_seconds(1500ms), 1.5);
  EXPECT_EQ(from_seconds(0.25), Duration{250ms});
}

}  // namespace
}  // namespace omni
