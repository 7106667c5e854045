// Clock: the only source of time for Omni's pure cores ("one core, two clocks").
//
// The scheduling core and the engine model never read the wall clock; they are handed a
// Clock. Live binaries pass a SteadyClock (optionally sped up); the simulator and tests pass a
// ManualClock and move it explicitly, so a run is reproducible to the nanosecond.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace omni {

using Duration = std::chrono::nanoseconds;

// A point on a clock's own monotonic time line (nanoseconds since the clock's epoch).
// Points from different clocks are not comparable.
using TimePoint = std::chrono::time_point<struct OmniClockTag, Duration>;

// Threading: now() may be called from any thread concurrently.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const noexcept = 0;
};

// Real monotonic time (std::chrono::steady_clock), scaled by `speedup` from the moment of
// construction: with speedup 10, one real second reads as ten. Epoch = construction time.
class SteadyClock final : public Clock {
 public:
  explicit SteadyClock(double speedup = 1.0) noexcept;
  TimePoint now() const noexcept override;
  double speedup() const noexcept { return speedup_; }

 private:
  std::chrono::steady_clock::time_point start_;
  double speedup_;
};

// Virtual time that moves only when told to. Starts at `start` (default 0).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint{}) noexcept : now_ns_(ns_of(start)) {}
  TimePoint now() const noexcept override {
    return TimePoint{Duration{now_ns_.load(std::memory_order_acquire)}};
  }
  void advance(Duration d) noexcept;
  // Moves to `t`; time never goes backwards, so an earlier `t` is ignored.
  void set(TimePoint t) noexcept;

 private:
  static std::int64_t ns_of(TimePoint t) noexcept { return t.time_since_epoch().count(); }
  std::atomic<std::int64_t> now_ns_;
};

// Seconds as a double, for metrics and cost models.
inline double to_seconds(Duration d) noexcept { return std::chrono::duration<double>(d).count(); }
inline Duration from_seconds(double s) noexcept {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace omni
