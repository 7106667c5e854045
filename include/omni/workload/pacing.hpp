// When each request of a workload is sent, relative to the start of a run.
//
//   kTrace  — the workload's own arrivals (trace timestamps or synthetic draws) times
//             time_scale: 0.5 replays twice as fast, 2 half as fast;
//   kRate   — a Poisson process of `rate` requests per second (gamma with `burstiness` as the
//             coefficient of variation), ignoring the workload's arrivals, as `vllm bench serve
//             --request-rate` does; rate = +inf sends everything at once;
//   kBurst  — everything at once (time 0); a concurrency cap then paces the run (closed loop).
// Pure: draws come from the injected seed only.
#pragma once

#include <cstdint>

#include "omni/common/random.hpp"
#include "omni/workload/request_spec.hpp"

namespace omni::workload {

struct PacingOptions {
  enum class Mode { kTrace, kRate, kBurst };
  Mode mode = Mode::kTrace;
  double time_scale = 1.0;
  double rate = 1.0;
  double burstiness = 1.0;
};

// Threading: one caller, requests in workload order.
class Pacer {
 public:
  Pacer(PacingOptions options, std::uint64_t seed) : options_(options), rng_(seed) {}
  // Seconds after the start of the run at which `spec` should be sent; non-decreasing.
  double send_at(const RequestSpec& spec);

 private:
  PacingOptions options_;
  SeededRandom rng_;
  double next_s_ = 0.0;
  bool first_ = true;
};

}  // namespace omni::workload
