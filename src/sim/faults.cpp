#include "sim/faults.hpp"

namespace omni::sim {

FaultDecision FaultInjector::decide() {
  FaultDecision d;
  std::lock_guard lock(mu_);
  ++requests_;
  d.crash = config_.crash_after > 0 && requests_ > config_.crash_after;
  // One draw per configured fault, in a fixed order: a seed gives the same faults every run.
  d.error = config_.error_rate > 0 && random_.bernoulli(config_.error_rate);
  d.stall = config_.stall_rate > 0 && random_.bernoulli(config_.stall_rate);
  d.stream_error = config_.stream_error_rate > 0 && random_.bernoulli(config_.stream_error_rate);
  d.hang = config_.hang_rate > 0 && random_.bernoulli(config_.hang_rate);
  return d;
}

}  // namespace omni::sim
