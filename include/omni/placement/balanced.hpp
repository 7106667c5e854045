// Our static planners: a per-layer balanced placement, uniform or with layer-wise, uneven
// redundancy.
//
// One layer (plan_layer_balanced):
//   1. replicate: start with one copy each, repeatedly give a copy to the expert with the highest
//      load per copy (at most `devices` copies: no two copies on one device; past `nodes`
//      copies an expert grows `nodes` copies at a time, so they can sit evenly on the nodes);
//   2. pack (LPT): copies heaviest first, each onto the least-loaded device that has a free slot
//      and does not hold that expert yet, keeping an expert's copies spread evenly over nodes
//      (at most ceil(copies / nodes) per node) so that locality-first routing splits its tokens
//      evenly too;
//   3. improve: swap slots between the most loaded device and the others while that lowers the
//      layer's max device load.
// Loads are modelled as even splits (load / copies on every copy).
//
// Layer-wise (plan_layerwise): every device must have the same slot count within a layer, so
// redundancy comes in units of "one slot on every device of one layer". A greedy loop with a
// priority queue of marginal gains (each gain measured by re-planning that layer with one more
// slot per device) gives each unit to the layer where it lowers the sum over layers of the max
// device load most.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/placement/model.hpp"

namespace omni::placement {

struct BalancedOptions {
  // Nodes the devices form (devices % nodes == 0). plan_layer_balanced uses it; plan_uniform
  // and plan_layerwise take topology.nodes instead.
  std::size_t nodes = 1;
  // Upper bound on improving swaps per layer in the local-search pass (0 disables it).
  std::size_t max_local_search_swaps = 256;
};

// kInvalidArgument when devices or slots_per_device is 0, devices * slots_per_device < experts,
// slots_per_device > experts (a device cannot hold distinct experts in every slot), or
// options.nodes does not divide devices.
Result<LayerPlacement> plan_layer_balanced(std::span<const double> expert_loads,
                                           std::size_t devices, std::size_t slots_per_device,
                                           const BalancedOptions& options = {});

// Every layer with topology.slots_per_device slots per device.
Result<Placement> plan_uniform(const LoadMatrix& loads, const Topology& topology,
                               const BalancedOptions& options = {});

struct LayerwiseOptions {
  // Memory per device, in expert slots summed over all layers (uniform redundancy with s slots
  // per device uses layers * s). 0 = layers * topology.slots_per_device.
  std::size_t total_slots_per_device = 0;
  // Fewest slots per device in a layer; 0 = the least that fits: ceil(experts / devices).
  std::size_t min_slots_per_device = 0;
  // Most slots per device in a layer; 0 = no cap beyond experts.
  std::size_t max_slots_per_device = 0;
  BalancedOptions balanced;
};

struct LayerwisePlan {
  Placement placement;
  std::vector<std::size_t> slots_per_device;  // per layer
  std::size_t unused_slots = 0;               // budget left when no layer gained from another slot
};

// kInvalidArgument when the budget cannot give every layer min_slots_per_device, or the
// bounds are inconsistent.
Result<LayerwisePlan> plan_layerwise(const LoadMatrix& loads, const Topology& topology,
                                     const LayerwiseOptions& options = {});

}  // namespace omni::placement
