#include <algorithm>
#include <cassert>
#include <utility>

#include "layer_state.hpp"

namespace omni::placement::detail {

LayerState::LayerState(std::span<const double> expert_loads, std::size_t devices, std::size_t slots,
                       std::size_t nodes)
    : loads_(expert_loads),
      devices_(devices),
      slots_(slots),
      nodes_(nodes),
      per_node_(devices / nodes),
      phy2log_(devices * slots, -1),
      copies_(expert_loads.size(), 0),
      device_load_(devices, 0.0),
      holds_(devices * expert_loads.size(), 0),
      node_count_(nodes * expert_loads.size(), 0) {
  assert(nodes > 0 && devices % nodes == 0);
}

LayerState::LayerState(std::span<const double> expert_loads, std::size_t devices, std::size_t nodes,
                       const LayerPlacement& layer)
    : LayerState(expert_loads, devices, layer.slots_per_device, nodes) {
  phy2log_ = layer.phy2log;
  for (std::size_t s = 0; s < phy2log_.size(); ++s) {
    ++copies_[idx(phy2log_[s])];
    count(s / slots_, phy2log_[s], 1);
  }
  recompute_loads();
}

void LayerState::count(std::size_t device, ExpertId e, int delta) noexcept {
  const std::size_t h = device * loads_.size() + idx(e);
  const std::size_t n = node_of(device) * loads_.size() + idx(e);
  holds_[h] = static_cast<std::uint8_t>(holds_[h] + delta);
  node_count_[n] = static_cast<std::uint16_t>(node_count_[n] + delta);
}

bool LayerState::fits_after_removal(std::size_t device, ExpertId e) const noexcept {
  const std::size_t after = copies(e) - 1;
  const std::size_t cap = (after + nodes_ - 1) / nodes_;
  const std::size_t from = node_of(device);
  for (std::size_t n = 0; n < nodes_; ++n) {
    if (node_copies(n, e) - (n == from ? std::size_t{1} : std::size_t{0}) > cap) return false;
  }
  return true;
}

std::size_t LayerState::max_device() const noexcept {
  return static_cast<std::size_t>(std::max_element(device_load_.begin(), device_load_.end()) -
                                  device_load_.begin());
}

double LayerState::mean_load() const noexcept {
  double total = 0.0;
  for (double l : device_load_) total += l;
  return total / static_cast<double>(devices_);
}

void LayerState::put(std::size_t device, std::size_t slot, ExpertId e) {
  assert(phy2log_[device * slots_ + slot] < 0);
  phy2log_[device * slots_ + slot] = e;
  count(device, e, 1);
  device_load_[device] += per_copy(e);
}

void LayerState::relocate(std::size_t from, std::size_t to) {
  assert(phy2log_[to] < 0 && phy2log_[from] >= 0);
  const ExpertId e = phy2log_[from];
  const double w = per_copy(e);
  device_load_[from / slots_] -= w;
  device_load_[to / slots_] += w;
  count(from / slots_, e, -1);
  count(to / slots_, e, 1);
  phy2log_[to] = e;
  phy2log_[from] = -1;
}

void LayerState::swap_slots(std::size_t a, std::size_t b) {
  const std::size_t da = a / slots_;
  const std::size_t db = b / slots_;
  const ExpertId ea = phy2log_[a];
  const ExpertId eb = phy2log_[b];
  const double delta = per_copy(ea) - per_copy(eb);
  device_load_[da] -= delta;
  device_load_[db] += delta;
  count(da, ea, -1);
  count(da, eb, 1);
  count(db, eb, -1);
  count(db, ea, 1);
  std::swap(phy2log_[a], phy2log_[b]);
}

void LayerState::replace(std::size_t slot, ExpertId e) {
  const std::size_t device = slot / slots_;
  const ExpertId old = phy2log_[slot];
  assert(copies_[idx(old)] >= 2);
  --copies_[idx(old)];
  count(device, old, -1);
  ++copies_[idx(e)];
  count(device, e, 1);
  phy2log_[slot] = e;
  recompute_loads();
}

void LayerState::recompute_loads() {
  std::fill(device_load_.begin(), device_load_.end(), 0.0);
  for (std::size_t s = 0; s < phy2log_.size(); ++s) {
    if (phy2log_[s] >= 0) device_load_[s / slots_] += per_copy(phy2log_[s]);
  }
}

namespace {

struct SwapChoice {
  std::size_t a = 0;
  std::size_t b = 0;
  double new_pair_max = 0.0;
  bool found = false;
};

// The swap of a slot on `top` with a slot elsewhere that minimises the larger of the two loads.
SwapChoice best_swap_from(const LayerState& s, std::size_t top) {
  SwapChoice best;
  const double top_load = s.load(top);
  best.new_pair_max = top_load;
  for_each_load_lowering_swap(s, top,
                              [&](std::size_t a, std::size_t b, std::size_t dev, double delta) {
                                const double other = s.load(dev);
                                if (other + 1e-12 >= top_load) return;
                                const double pair_max = std::max(top_load - delta, other + delta);
                                if (pair_max < best.new_pair_max - 1e-9 * top_load) {
                                  best = SwapChoice{a, b, pair_max, true};
                                }
                              });
  return best;
}

}  // namespace

std::size_t local_search(LayerState& state, std::size_t max_swaps) {
  std::size_t swaps = 0;
  while (swaps < max_swaps) {
    const SwapChoice choice = best_swap_from(state, state.max_device());
    if (!choice.found) break;
    state.swap_slots(choice.a, choice.b);
    ++swaps;
  }
  return swaps;
}

}  // namespace omni::placement::detail
