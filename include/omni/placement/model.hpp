// The data model of expert placement: loads in, placements out.
//
//   LoadMatrix   L layers × E logical experts, tokens routed to each expert in a window
//   Topology     nodes (hosts) × devices per node, physical expert slots per device
//   Placement    per layer: phy2log[device * slots_per_device + k] = logical expert id
//
//     layer l     device 0          device 1          ...   device D-1
//               ┌─────┬─────┐     ┌─────┬─────┐           ┌─────┬─────┐
//     phy2log   │ e17 │ e3  │     │ e17 │ e250│    ...    │ e9  │ e41 │   (slots_per_device = 2)
//               └─────┴─────┘     └─────┴─────┘           └─────┴─────┘
//     logcnt[e] = number of slots holding expert e (≥ 1 for every expert)
//
// Layers may have different slots_per_device (layer-wise, uneven redundancy); within a layer
// every device has the same number of slots, as the engines' weight tensors require.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::placement {

using ExpertId = std::int32_t;

// Row-major loads; every value finite and >= 0 (checked by make()).
class LoadMatrix {
 public:
  LoadMatrix() = default;
  // kInvalidArgument for a size mismatch, zero layers/experts, a negative or non-finite value
  // (the message names the layer and expert).
  static Result<LoadMatrix> make(std::size_t layers, std::size_t experts,
                                 std::vector<double> values);

  std::size_t layers() const noexcept { return layers_; }
  std::size_t experts() const noexcept { return experts_; }
  double at(std::size_t layer, std::size_t expert) const noexcept {
    return values_[layer * experts_ + expert];
  }
  std::span<const double> layer(std::size_t l) const noexcept {
    return {values_.data() + l * experts_, experts_};
  }
  const std::vector<double>& values() const noexcept { return values_; }

 private:
  std::size_t layers_ = 0;
  std::size_t experts_ = 0;
  std::vector<double> values_;
};

struct Topology {
  std::size_t nodes = 1;             // hosts
  std::size_t devices = 1;           // in total; a multiple of nodes
  std::size_t slots_per_device = 1;  // physical expert slots per device per layer (uniform plans)

  std::size_t devices_per_node() const noexcept { return devices / nodes; }
  std::size_t node_of(std::size_t device) const noexcept { return device / devices_per_node(); }
  std::size_t slots() const noexcept { return devices * slots_per_device; }
  // kInvalidArgument when a count is zero or devices is not a multiple of nodes.
  Status validate() const;
};

struct LayerPlacement {
  std::size_t slots_per_device = 0;
  std::vector<ExpertId> phy2log;  // devices * slots_per_device entries

  std::size_t device_of_slot(std::size_t slot) const noexcept { return slot / slots_per_device; }
};

struct Placement {
  std::size_t devices = 0;
  std::size_t experts = 0;
  std::vector<LayerPlacement> layers;

  // logcnt for one layer: copies of each logical expert.
  std::vector<std::size_t> copies(std::size_t layer) const;
  // kInvalidArgument unless every layer has devices * slots_per_device slots, every id is in
  // [0, experts), every expert has at least one copy, and (unless allowed: EPLB's packing
  // does not forbid it) no device holds two copies of one expert.
  Status validate(bool allow_colocated_copies = false) const;
};

}  // namespace omni::placement
