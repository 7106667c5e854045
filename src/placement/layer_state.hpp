// Internal: the state of one layer while our planners and the rebalancer work on it, under the
// even-split load model (every copy of an expert carries load / copies).
//
// Node spread: with locality-first routing, an expert's copies split its tokens evenly only when
// the nodes holding copies hold equally many. The planners keep every node's share of an
// expert with c copies at most ceil(c / nodes) (one per node while c <= nodes); fits_node()
// tests that rule. Copy counts are kept node-aligned (c <= nodes or a multiple of nodes) so the
// rule leaves every node holding a copy with the same number of copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "omni/placement/model.hpp"

namespace omni::placement::detail {

class LayerState {
 public:
  // An empty layer: every slot free (-1).
  LayerState(std::span<const double> expert_loads, std::size_t devices, std::size_t slots,
             std::size_t nodes);
  // A filled layer from an existing placement.
  LayerState(std::span<const double> expert_loads, std::size_t devices, std::size_t nodes,
             const LayerPlacement& layer);

  std::size_t devices() const noexcept { return devices_; }
  std::size_t slots_per_device() const noexcept { return slots_; }
  std::size_t experts() const noexcept { return loads_.size(); }
  ExpertId at(std::size_t slot) const noexcept { return phy2log_[slot]; }
  std::size_t copies(ExpertId e) const noexcept { return copies_[idx(e)]; }
  double per_copy(ExpertId e) const noexcept {
    return loads_[idx(e)] / static_cast<double>(copies_[idx(e)]);
  }
  double load(std::size_t device) const noexcept { return device_load_[device]; }
  bool holds(std::size_t device, ExpertId e) const noexcept {
    return holds_[device * loads_.size() + idx(e)] != 0;
  }
  std::size_t node_of(std::size_t device) const noexcept { return device / per_node_; }
  std::size_t node_copies(std::size_t node, ExpertId e) const noexcept {
    return node_count_[node * loads_.size() + idx(e)];
  }
  // Whether one more copy of e on device's node keeps e's node spread when e has copies_after
  // copies in all.
  bool fits_node(std::size_t device, ExpertId e, std::size_t copies_after) const noexcept {
    return node_copies(node_of(device), e) + 1 <= (copies_after + nodes_ - 1) / nodes_;
  }
  // Copy counts whose copies can sit equally many on every node holding one: c <= nodes, or a
  // multiple of nodes.
  bool node_aligned(std::size_t copies) const noexcept {
    return copies <= nodes_ || copies % nodes_ == 0;
  }
  // Whether e's copies, minus one on `device`'s node, keep the spread with one copy fewer.
  bool fits_after_removal(std::size_t device, ExpertId e) const noexcept;
  std::size_t max_device() const noexcept;
  double max_load() const noexcept { return device_load_[max_device()]; }
  double mean_load() const noexcept;

  // Sets the copy counts before packing (an empty layer only).
  void set_copies(std::vector<std::size_t> copies) { copies_ = std::move(copies); }
  // Puts e into a free slot of device (its copy count is already set).
  void put(std::size_t device, std::size_t slot, ExpertId e);
  // Moves the expert in `from` into the free slot `to` (on another device).
  void relocate(std::size_t from, std::size_t to);
  // Exchanges the experts of two slots on different devices.
  void swap_slots(std::size_t a, std::size_t b);
  // Overwrites slot's expert with e; copy counts and every affected device load follow.
  void replace(std::size_t slot, ExpertId e);

  LayerPlacement to_layer() const { return LayerPlacement{slots_, phy2log_}; }

 private:
  static std::size_t idx(ExpertId e) noexcept { return static_cast<std::size_t>(e); }
  void recompute_loads();
  void count(std::size_t device, ExpertId e, int delta) noexcept;

  std::span<const double> loads_;
  std::size_t devices_;
  std::size_t slots_;
  std::size_t nodes_;
  std::size_t per_node_;
  std::vector<ExpertId> phy2log_;
  std::vector<std::size_t> copies_;
  std::vector<double> device_load_;
  std::vector<std::uint8_t> holds_;        // devices x experts: how many copies (0 or 1 normally)
  std::vector<std::uint16_t> node_count_;  // nodes x experts: copies on the node
};

// Improving swaps between the most loaded device and the others; returns swaps made.
std::size_t local_search(LayerState& state, std::size_t max_swaps);

// Calls visit(a, b, device, delta) for every swap of a slot `a` on device `top` with a slot `b`
// on a less loaded `device` that moves load off `top` (delta > 0 is the per-copy load that
// moves), keeps every device free of duplicate copies and keeps copies spread over nodes.
// The local search and the rebalancer both score these candidates, each in its own way.
template <class Visit>
void for_each_load_lowering_swap(const LayerState& s, std::size_t top, Visit&& visit) {
  const std::size_t per = s.slots_per_device();
  const double top_load = s.load(top);
  for (std::size_t i = 0; i < per; ++i) {
    const std::size_t a = top * per + i;
    const ExpertId x = s.at(a);
    const double wx = s.per_copy(x);
    for (std::size_t dev = 0; dev < s.devices(); ++dev) {
      if (dev == top || s.holds(dev, x) || s.load(dev) >= top_load) continue;
      const bool same_node = s.node_of(dev) == s.node_of(top);
      if (!same_node && !s.fits_node(dev, x, s.copies(x))) continue;
      for (std::size_t j = 0; j < per; ++j) {
        const std::size_t b = dev * per + j;
        const ExpertId y = s.at(b);
        const double delta = wx - s.per_copy(y);
        if (delta <= 0.0 || s.holds(top, y)) continue;
        if (!same_node && !s.fits_node(top, y, s.copies(y))) continue;
        visit(a, b, dev, delta);
      }
    }
  }
}

}  // namespace omni::placement::detail
