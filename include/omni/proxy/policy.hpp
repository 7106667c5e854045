// What the gateway core counts about a node. The policy seam itself is omni::sched's (one
// interface for omni-proxy and omni-cluster: omni/sched/policy.hpp); the core builds its
// candidates from these.
#pragma once

#include <cstdint>

#include "omni/sched/policy.hpp"

namespace omni::proxy {

// A node's pool: the one role vocabulary (omni::sched::Role).
using Role = sched::Role;

// A node's load as the core counts it: at dispatch time, released on completion.
struct NodeLoad {
  std::uint64_t outstanding_tokens = 0;
  std::uint32_t running = 0;
};

// A node's load as the engine itself last reported it (zero until the gateway learns it).
struct EngineLoad {
  std::uint32_t running = 0;
  std::uint32_t waiting = 0;
  double kv_usage = 0.0;  // 0..1
};

}  // namespace omni::proxy
