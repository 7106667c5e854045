// Routing tables and the load model.
//
// Each source device has, per logical expert, a list of target slots among which it spreads
// that expert's tokens evenly:
//   kLocalityFirst  the copies on the device itself if any, else those on the same node,
//                   else all copies (the omni-infer rule: local, then same host, then spread)
//   kEvenSplit      always all copies (EPLB's assumption: load / copies on every copy)
// With tokens originating uniformly on all devices of a single node both give load / copies.
//
//   offsets[src * experts + e] .. offsets[src * experts + e + 1]  ->  targets[...] (slot ids)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/placement/model.hpp"

namespace omni::placement {

enum class RoutingPolicy { kLocalityFirst, kEvenSplit };

// One layer's routing: per source device and expert, the slots receiving its tokens.
class LayerRouting {
 public:
  // Requires a placement valid for `experts` experts and topology.devices devices.
  static LayerRouting build(const LayerPlacement& layer, const Topology& topology,
                            std::size_t experts, RoutingPolicy policy);

  std::size_t devices() const noexcept { return devices_; }
  std::size_t experts() const noexcept { return experts_; }
  std::span<const std::uint32_t> targets(std::size_t source_device,
                                         std::size_t expert) const noexcept {
    const std::size_t row = source_device * experts_ + expert;
    return {targets_.data() + offsets_[row], offsets_[row + 1] - offsets_[row]};
  }

 private:
  std::size_t devices_ = 0;
  std::size_t experts_ = 0;
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> targets_;
};

struct EvalOptions {
  RoutingPolicy policy = RoutingPolicy::kLocalityFirst;
  // Share of each expert's tokens that originate on each device (devices entries, sum 1);
  // empty = uniform over devices.
  std::vector<double> origin;
};

// Tokens each slot processes in one layer under the routing tables.
std::vector<double> slot_loads(const LayerPlacement& layer, const LayerRouting& routing,
                               const Topology& topology, std::span<const double> expert_loads,
                               std::span<const double> origin);

struct LayerMetrics {
  double max_device_load = 0.0;
  double mean_device_load = 0.0;
  double imbalance = 1.0;          // max / mean (1 when the layer carries no tokens)
  double cross_node_tokens = 0.0;  // tokens sent to a slot on another node
  double total_tokens = 0.0;
};

struct PlacementMetrics {
  std::vector<LayerMetrics> layers;
  double sum_max_device_load = 0.0;  // what the step time follows
  double mean_imbalance = 1.0;       // mean over layers of max / mean
  double cross_node_share = 0.0;     // cross-node tokens / all tokens
};

// Per-layer device loads (device load = sum of its slots).
std::vector<double> device_loads(const LayerPlacement& layer, std::span<const double> expert_loads,
                                 const Topology& topology, const EvalOptions& options = {});

// kInvalidArgument when shapes disagree (layers, experts, devices, origin size) or the
// placement is invalid.
Result<PlacementMetrics> evaluate(const Placement& placement, const LoadMatrix& loads,
                                  const Topology& topology, const EvalOptions& options = {});

// The max device load of one layer under even splitting (load / copies per copy), the model the
// planners optimise; cheap, no routing tables.
double even_split_max_load(const LayerPlacement& layer, std::span<const double> expert_loads,
                           std::size_t devices);

}  // namespace omni::placement
