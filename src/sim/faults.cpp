#include "sim/faults.hpp"

namespace omni::sim {

FaultDecision FaultInjector::decide() {
  FaultDecision d;
  std::lock_guard lock(mu_);
  ++requests_;
  d.crash = config_.crash_after > 0 && requests_ > config_.crash_after;
  d.error = config_.error_rate > 0 && random_.bernoulli(config_.error_rate);
  d.stall = config_.stall_rate > 0 && random_.bernoulli(config_.stall_rate);
  return d;
}

}  // namespace omni::sim
