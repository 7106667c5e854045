#include "omni/common/clock.hpp"

#include <algorithm>

namespace omni {

SteadyClock::SteadyClock(double speedup) noexcept
    : start_(std::chrono::steady_clock::now()), speedup_(speedup > 0 ? speedup : 1.0) {}

TimePoint SteadyClock::now() const noexcept {
  const auto real = std::chrono::steady_clock::now() - start_;
  if (speedup_ == 1.0) return TimePoint{std::chrono::duration_cast<Duration>(real)};
  const auto scaled = std::chrono::duration<double, std::nano>(real) * speedup_;
  return TimePoint{std::chrono::duration_cast<Duration>(scaled)};
}

void ManualClock::advance(Duration d) noexcept {
  if (d.count() > 0) now_ns_.fetch_add(d.count(), std::memory_order_acq_rel);
}

void ManualClock::set(TimePoint t) noexcept {
  const std::int64_t target = ns_of(t);
  std::int64_t current = now_ns_.load(std::memory_order_acquire);
  while (target > current &&
         !now_ns_.compare_exchange_weak(current, target, std::memory_order_acq_rel)) {
  }
}

}  // namespace omni
