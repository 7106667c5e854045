// Send times per pacing mode (omni/workload/pacing.hpp).
#include "omni/workload/pacing.hpp"

#include <algorithm>
#include <cmath>

#include "omni/workload/synthetic.hpp"

namespace omni::workload {

double Pacer::send_at(const RequestSpec& spec) {
  switch (options_.mode) {
    case PacingOptions::Mode::kTrace:
      next_s_ = std::max(next_s_, spec.arrival_s * options_.time_scale);
      return next_s_;
    case PacingOptions::Mode::kBurst: return 0.0;
    case PacingOptions::Mode::kRate:
      if (first_) {
        first_ = false;
        return 0.0;
      }
      if (!std::isfinite(options_.rate)) return next_s_;
      next_s_ += gamma_gap(rng_, options_.rate, options_.burstiness);
      return next_s_;
  }
  return next_s_;
}

}  // namespace omni::workload
