// The simulator core: replays load windows through a placement algorithm.
//
// Window 0 is the profiling window: every algorithm plans from it and is measured on it with
// no weights moved (the initial deployment). For each later window w the placement in force is
// measured on w's loads first, then the algorithm reacts to what it has now seen:
//   kStaticEplb        EPLB plan from window 0, never changed
//   kStaticLayerwise   layer-wise plan from window 0, never changed
//   kPeriodicEplb      EPLB re-plan every `replan_period` windows from the EMA of loads seen
//                      (weights moved = slots whose expert changed)
//   kDynamicRebalance  balanced plan from window 0, then rebalance() on the EMA every window
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/placement/balanced.hpp"
#include "omni/placement/model.hpp"
#include "omni/placement/rebalance.hpp"
#include "omni/placement/routing.hpp"

namespace omni::placement {

enum class SimAlgorithm { kStaticEplb, kStaticLayerwise, kPeriodicEplb, kDynamicRebalance };

// "static-eplb", "static-layerwise", "periodic-eplb", "dynamic"
std::string_view sim_algorithm_name(SimAlgorithm algorithm) noexcept;
// The inverse; kInvalidArgument for an unknown name.
Result<SimAlgorithm> parse_sim_algorithm(std::string_view name);

struct SimOptions {
  Topology topology;              // slots_per_device = the uniform memory per layer
  std::size_t num_groups = 1;     // EPLB expert groups
  std::size_t replan_period = 4;  // kPeriodicEplb
  double ema_alpha = 0.5;         // kPeriodicEplb and kDynamicRebalance
  RebalanceOptions rebalance;     // kDynamicRebalance, per window
  LayerwiseOptions layerwise;     // kStaticLayerwise (total 0 = same memory as uniform)
  EvalOptions eval;
};

struct WindowReport {
  std::size_t window = 0;
  double sum_max_device_load = 0.0;
  double mean_imbalance = 1.0;
  double cross_node_share = 0.0;
  std::size_t weights_moved = 0;  // after measuring this window, to prepare the next
};

struct SimReport {
  SimAlgorithm algorithm = SimAlgorithm::kStaticEplb;
  std::vector<WindowReport> windows;
  std::size_t total_weights_moved = 0;
  double mean_imbalance = 1.0;  // over windows
};

// kInvalidArgument for no windows, windows of different shapes, or a bad topology/budget.
Result<SimReport> simulate(std::span<const LoadMatrix> windows, SimAlgorithm algorithm,
                           const SimOptions& options);

}  // namespace omni::placement
