// Fault injection for reliability tests: deterministic (seeded) decisions, one per request.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "omni/common/clock.hpp"
#include "omni/common/random.hpp"

namespace omni::sim {

struct FaultConfig {
  double error_rate = 0.0;  // fraction of generation requests answered with error_status
  int error_status = 500;
  Duration added_latency{0};   // before every generation request is processed
  double stall_rate = 0.0;     // fraction of streams that stall once
  Duration stall_duration{0};  // 0: until the client goes away
  std::uint32_t stall_after_tokens = 1;
  std::uint64_t crash_after = 0;         // the process exits abruptly on request crash_after + 1
  std::uint64_t crash_after_tokens = 0;  // ... once one request has sent this many tokens
  double stream_error_rate = 0.0;        // fraction of streams cut by an in-stream error event
  std::uint32_t stream_error_after_tokens = 1;
  double hang_rate = 0.0;                 // fraction of generation requests never answered
  bool unresponsive = false;              // no route answers at all
  bool bootstrap_never_connects = false;  // SGLang PD: the bootstrap peer never connects
  Duration refuse_connections_for{0};     // the listener opens only after this long
};

struct FaultDecision {
  bool crash = false;
  bool error = false;
  bool stall = false;
  bool stream_error = false;
  bool hang = false;
};

// Threading: decide() may be called from any thread.
class FaultInjector {
 public:
  FaultInjector(FaultConfig config, std::uint64_t seed) : config_(config), random_(seed) {}
  FaultDecision decide();
  const FaultConfig& config() const { return config_; }

 private:
  FaultConfig config_;
  std::mutex mu_;
  SeededRandom random_;
  std::uint64_t requests_ = 0;
};

}  // namespace omni::sim
