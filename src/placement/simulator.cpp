#include "omni/placement/simulator.hpp"

#include <string>
#include <utility>

#include "omni/placement/eplb.hpp"

namespace omni::placement {

std::string_view sim_algorithm_name(SimAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case SimAlgorithm::kStaticEplb: return "static-eplb";
    case SimAlgorithm::kStaticLayerwise: return "static-layerwise";
    case SimAlgorithm::kPeriodicEplb: return "periodic-eplb";
    case SimAlgorithm::kDynamicRebalance: return "dynamic";
  }
  return "unknown";
}

Result<SimAlgorithm> parse_sim_algorithm(std::string_view name) {
  for (SimAlgorithm a : {SimAlgorithm::kStaticEplb, SimAlgorithm::kStaticLayerwise,
                         SimAlgorithm::kPeriodicEplb, SimAlgorithm::kDynamicRebalance}) {
    if (sim_algorithm_name(a) == name) return a;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown algorithm '" + std::string(name) +
                        "' (expected static-eplb, static-layerwise, periodic-eplb or dynamic)");
}

namespace {

std::size_t slots_changed(const Placement& before, const Placement& after) {
  std::size_t changed = 0;
  for (std::size_t l = 0; l < before.layers.size(); ++l) {
    const auto& a = before.layers[l].phy2log;
    const auto& b = after.layers[l].phy2log;
    if (a.size() != b.size()) {
      changed += b.size();
      continue;
    }
    for (std::size_t s = 0; s < a.size(); ++s) changed += a[s] != b[s] ? 1 : 0;
  }
  return changed;
}

Result<Placement> initial_plan(const LoadMatrix& loads, SimAlgorithm algorithm,
                               const SimOptions& o) {
  switch (algorithm) {
    case SimAlgorithm::kStaticEplb:
    case SimAlgorithm::kPeriodicEplb: return eplb_plan(loads, o.topology, o.num_groups);
    case SimAlgorithm::kStaticLayerwise: {
      auto plan = plan_layerwise(loads, o.topology, o.layerwise);
      if (!plan) return plan.error();
      return std::move(plan->placement);
    }
    case SimAlgorithm::kDynamicRebalance: return plan_uniform(loads, o.topology);
  }
  return make_error(ErrorCode::kInternal, "simulate: unknown algorithm");
}

// Reacts to the smoothed loads seen so far; returns the number of expert weights moved.
Result<std::size_t> react(Placement& placement, const LoadMatrix& smoothed, std::size_t window,
                          SimAlgorithm algorithm, const SimOptions& o) {
  if (algorithm == SimAlgorithm::kPeriodicEplb) {
    if (o.replan_period == 0 || (window + 1) % o.replan_period != 0) return std::size_t{0};
    auto fresh = eplb_plan(smoothed, o.topology, o.num_groups);
    if (!fresh) return fresh.error();
    const std::size_t moved = slots_changed(placement, *fresh);
    placement = std::move(*fresh);
    return moved;
  }
  if (algorithm == SimAlgorithm::kDynamicRebalance) {
    auto plan = rebalance(placement, smoothed, o.topology, o.rebalance);
    if (!plan) return plan.error();
    apply_moves(placement, plan->moves);
    return plan->weights_moved;
  }
  return std::size_t{0};
}

}  // namespace

Result<SimReport> simulate(std::span<const LoadMatrix> windows, SimAlgorithm algorithm,
                           const SimOptions& options) {
  if (windows.empty()) return make_error(ErrorCode::kInvalidArgument, "simulate: no windows");
  for (const LoadMatrix& w : windows) {
    if (w.layers() != windows[0].layers() || w.experts() != windows[0].experts()) {
      return make_error(ErrorCode::kInvalidArgument, "simulate: windows differ in shape");
    }
  }
  auto placement = initial_plan(windows[0], algorithm, options);
  if (!placement) return placement.error();
  if (options.ema_alpha <= 0.0 || options.ema_alpha > 1.0) {
    return make_error(ErrorCode::kInvalidArgument, "simulate: ema_alpha must be in (0, 1]");
  }
  LoadSmoother smoother(options.ema_alpha);
  SimReport report;
  report.algorithm = algorithm;
  double imbalance_sum = 0.0;
  for (std::size_t w = 0; w < windows.size(); ++w) {
    auto metrics = evaluate(*placement, windows[w], options.topology, options.eval);
    if (!metrics) return metrics.error();
    WindowReport row{w, metrics->sum_max_device_load, metrics->mean_imbalance,
                     metrics->cross_node_share, 0};
    if (Status s = smoother.update(windows[w]); !s) return s.error();
    if (w + 1 < windows.size()) {
      auto moved = react(*placement, smoother.smoothed(), w, algorithm, options);
      if (!moved) return moved.error();
      row.weights_moved = *moved;
    }
    report.total_weights_moved += row.weights_moved;
    imbalance_sum += row.mean_imbalance;
    report.windows.push_back(row);
  }
  report.mean_imbalance = imbalance_sum / static_cast<double>(windows.size());
  return report;
}

}  // namespace omni::placement
