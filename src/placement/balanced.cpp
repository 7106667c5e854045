#include "omni/placement/balanced.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <string>
#include <utility>

#include "layer_state.hpp"

namespace omni::placement {

namespace {

using detail::LayerState;

// Copies per expert: one each, then the next copies always to the highest load per copy, never
// more copies than devices (no device may hold two). Past `nodes` copies an expert grows by
// `nodes` at a time, so its copies can be spread equally over the nodes (see LayerState).
std::vector<std::size_t> replicate_by_load_per_copy(std::span<const double> loads,
                                                    std::size_t devices, std::size_t nodes,
                                                    std::size_t total) {
  std::vector<std::size_t> copies(loads.size(), 1);
  using Entry = std::pair<double, std::size_t>;  // (load per copy, expert); lower index wins ties
  auto lower = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(lower)> heap(lower);
  for (std::size_t e = 0; e < loads.size(); ++e) heap.emplace(loads[e], e);
  std::size_t extra = total - loads.size();
  while (extra > 0 && !heap.empty()) {
    const std::size_t e = heap.top().second;
    heap.pop();
    const std::size_t step = copies[e] < nodes ? 1 : nodes;
    if (step > extra || copies[e] + step > devices) continue;  // can never fit again
    copies[e] += step;
    extra -= step;
    heap.emplace(loads[e] / static_cast<double>(copies[e]), e);
  }
  // Only when every expert is past `nodes` copies: fill what is left one copy at a time.
  for (std::size_t e = 0; extra > 0 && e < loads.size(); ++e) {
    const std::size_t add = std::min(extra, devices - copies[e]);
    copies[e] += add;
    extra -= add;
  }
  return copies;
}

std::size_t first_free(const LayerState& state, std::size_t device) {
  std::size_t slot = device * state.slots_per_device();
  while (state.at(slot) >= 0) ++slot;
  return slot;
}

// Moves one of `full`'s experts that `open` lacks to `open`, freeing a slot on `full`.
void make_room(LayerState& state, std::size_t full, std::size_t open) {
  const std::size_t per = state.slots_per_device();
  const bool same_node = state.node_of(full) == state.node_of(open);
  std::size_t best = per;
  bool best_fits = false;
  for (std::size_t j = 0; j < per; ++j) {
    const ExpertId y = state.at(full * per + j);
    if (state.holds(open, y)) continue;
    const bool fits = same_node || state.fits_node(open, y, state.copies(y));
    // Prefer a move that keeps y's node spread; among those, the lightest copy.
    if (best == per || (fits && !best_fits) ||
        (fits == best_fits && state.per_copy(y) < state.per_copy(state.at(full * per + best)))) {
      best = j;
      best_fits = fits;
    }
  }
  // open has a free slot, so it holds fewer distinct experts than full: one always fits.
  state.relocate(full * per + best, first_free(state, open));
}

// LPT: heaviest copy first onto the least-loaded device with room that lacks the expert.
void pack_lpt(LayerState& state, const std::vector<std::size_t>& copies) {
  std::vector<ExpertId> order(copies.size());
  std::iota(order.begin(), order.end(), ExpertId{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](ExpertId a, ExpertId b) { return state.per_copy(a) > state.per_copy(b); });
  std::vector<std::size_t> used(state.devices(), 0);
  const std::size_t per = state.slots_per_device();
  for (ExpertId e : order) {
    for (std::size_t c = 0; c < copies[static_cast<std::size_t>(e)]; ++c) {
      std::size_t pick = state.devices();
      std::size_t with_room = state.devices();
      std::size_t without_e = state.devices();
      for (std::size_t d = 0; d < state.devices(); ++d) {
        const bool room = used[d] < per;
        const bool lacks =
            !state.holds(d, e) && state.fits_node(d, e, copies[static_cast<std::size_t>(e)]);
        if (room && (with_room == state.devices() || state.load(d) < state.load(with_room))) {
          with_room = d;
        }
        if (lacks && (without_e == state.devices() || state.load(d) < state.load(without_e))) {
          without_e = d;
        }
        if (room && lacks && (pick == state.devices() || state.load(d) < state.load(pick))) {
          pick = d;
        }
      }
      if (pick == state.devices()) {
        // Every device with room holds e or sits on a node with its share of e: free a slot on
        // one that may take it (one exists: copies <= devices and node shares add up).
        make_room(state, without_e, with_room);
        ++used[with_room];
        --used[without_e];
        pick = without_e;
      }
      state.put(pick, first_free(state, pick) - pick * per, e);
      ++used[pick];
    }
  }
}

Status check_layer_shape(std::size_t experts, std::size_t devices, std::size_t slots) {
  if (devices == 0 || slots == 0) {
    return make_error(ErrorCode::kInvalidArgument, "plan: devices and slots must be > 0");
  }
  if (devices * slots < experts) {
    return make_error(ErrorCode::kInvalidArgument, "plan: " + std::to_string(devices * slots) +
                                                       " slots cannot hold " +
                                                       std::to_string(experts) + " experts");
  }
  if (slots > experts) {
    return make_error(ErrorCode::kInvalidArgument,
                      "plan: more slots per device than distinct experts");
  }
  return ok_status();
}

struct LayerPlan {
  LayerPlacement layer;
  double max_load = 0.0;
};

LayerPlan plan_one(std::span<const double> loads, std::size_t devices, std::size_t slots,
                   const BalancedOptions& options) {
  LayerState state(loads, devices, slots, options.nodes);
  std::vector<std::size_t> copies =
      replicate_by_load_per_copy(loads, devices, options.nodes, devices * slots);
  state.set_copies(copies);
  pack_lpt(state, copies);
  detail::local_search(state, options.max_local_search_swaps);
  return LayerPlan{state.to_layer(), state.max_load()};
}

}  // namespace

Result<LayerPlacement> plan_layer_balanced(std::span<const double> expert_loads,
                                           std::size_t devices, std::size_t slots_per_device,
                                           const BalancedOptions& options) {
  if (expert_loads.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "plan: no experts");
  }
  if (Status s = check_layer_shape(expert_loads.size(), devices, slots_per_device); !s) {
    return s.error();
  }
  if (options.nodes == 0 || devices % options.nodes != 0) {
    return make_error(ErrorCode::kInvalidArgument, "plan: nodes must divide devices");
  }
  return plan_one(expert_loads, devices, slots_per_device, options).layer;
}

Result<Placement> plan_uniform(const LoadMatrix& loads, const Topology& topology,
                               const BalancedOptions& options) {
  if (Status s = topology.validate(); !s) return s.error();
  if (Status s = check_layer_shape(loads.experts(), topology.devices, topology.slots_per_device);
      !s) {
    return s.error();
  }
  BalancedOptions o = options;
  o.nodes = topology.nodes;
  Placement p;
  p.devices = topology.devices;
  p.experts = loads.experts();
  p.layers.reserve(loads.layers());
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    p.layers.push_back(
        plan_one(loads.layer(l), topology.devices, topology.slots_per_device, o).layer);
  }
  return p;
}

namespace {

struct Bounds {
  std::size_t min_slots = 0;
  std::size_t max_slots = 0;
  std::size_t total = 0;
};

Result<Bounds> layerwise_bounds(const LoadMatrix& loads, const Topology& topology,
                                const LayerwiseOptions& o) {
  if (Status s = topology.validate(); !s) return s.error();
  const std::size_t devices = topology.devices;
  Bounds b;
  b.min_slots = o.min_slots_per_device != 0 ? o.min_slots_per_device
                                            : (loads.experts() + devices - 1) / devices;
  b.max_slots = o.max_slots_per_device != 0 ? std::min(o.max_slots_per_device, loads.experts())
                                            : loads.experts();
  b.total = o.total_slots_per_device != 0 ? o.total_slots_per_device
                                          : loads.layers() * topology.slots_per_device;
  if (Status s = check_layer_shape(loads.experts(), devices, b.min_slots); !s) return s.error();
  if (b.max_slots < b.min_slots) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layerwise: max_slots_per_device < min_slots_per_device");
  }
  if (b.total < loads.layers() * b.min_slots) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layerwise: budget of " + std::to_string(b.total) +
                          " slots per device cannot give " + std::to_string(loads.layers()) +
                          " layers " + std::to_string(b.min_slots) + " slots each");
  }
  return b;
}

}  // namespace

namespace {

// The greedy allocation of redundancy units to layers.
class LayerwiseGreedy {
 public:
  LayerwiseGreedy(const LoadMatrix& loads, std::size_t devices, const Bounds& bounds,
                  const BalancedOptions& options)
      : loads_(loads),
        devices_(devices),
        bounds_(bounds),
        options_(options),
        current_(loads.layers()),
        next_(loads.layers()),
        step_(loads.layers(), 0),
        slots_(loads.layers(), bounds.min_slots) {}

  // Gives out up to `budget` units; returns what is left.
  std::size_t run(std::size_t budget) {
    for (std::size_t l = 0; l < slots_.size(); ++l) {
      current_[l] = plan_one(loads_.layer(l), devices_, slots_[l], options_);
      propose(l);
    }
    while (budget > 0 && !gains_.empty() && gains_.top().first > 0.0) {
      const std::size_t l = gains_.top().second;
      gains_.pop();
      if (step_[l] > budget) continue;  // cannot afford this layer's next useful step
      current_[l] = std::move(next_[l]);
      slots_[l] += step_[l];
      budget -= step_[l];
      propose(l);
    }
    return budget;
  }

  double sum_max() const {
    double sum = 0.0;
    for (const LayerPlan& p : current_) sum += p.max_load;
    return sum;
  }
  std::vector<LayerPlan>& plans() { return current_; }
  std::vector<std::size_t>& slots() { return slots_; }

 private:
  // The gain per unit of the layer's next step: one more slot per device, or two when one
  // alone does not help (the max is often held by a hot expert that needs two more copies).
  void propose(std::size_t l) {
    for (std::size_t step = 1; step <= 2 && slots_[l] + step <= bounds_.max_slots; ++step) {
      next_[l] = plan_one(loads_.layer(l), devices_, slots_[l] + step, options_);
      const double gain = (current_[l].max_load - next_[l].max_load) / static_cast<double>(step);
      if (gain > 0.0) {
        step_[l] = step;
        gains_.emplace(gain, l);
        return;
      }
    }
  }

  using Entry = std::pair<double, std::size_t>;  // (gain per unit, layer); lower layer on ties
  struct Lower {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    }
  };

  const LoadMatrix& loads_;
  std::size_t devices_;
  Bounds bounds_;
  BalancedOptions options_;
  std::vector<LayerPlan> current_;
  std::vector<LayerPlan> next_;
  std::vector<std::size_t> step_;
  std::vector<std::size_t> slots_;
  std::priority_queue<Entry, std::vector<Entry>, Lower> gains_;
};

LayerwisePlan to_plan(std::vector<LayerPlan>& layers, std::vector<std::size_t> slots,
                      std::size_t devices, std::size_t experts, std::size_t unused) {
  LayerwisePlan plan;
  plan.placement.devices = devices;
  plan.placement.experts = experts;
  plan.placement.layers.reserve(layers.size());
  for (LayerPlan& lp : layers) plan.placement.layers.push_back(std::move(lp.layer));
  plan.slots_per_device = std::move(slots);
  plan.unused_slots = unused;
  return plan;
}

}  // namespace

Result<LayerwisePlan> plan_layerwise(const LoadMatrix& loads, const Topology& topology,
                                     const LayerwiseOptions& options) {
  auto bounds = layerwise_bounds(loads, topology, options);
  if (!bounds) return bounds.error();
  const std::size_t layers = loads.layers();
  BalancedOptions balanced = options.balanced;
  balanced.nodes = topology.nodes;
  LayerwiseGreedy greedy(loads, topology.devices, *bounds, balanced);
  const std::size_t unused = greedy.run(bounds->total - layers * bounds->min_slots);

  // Greedy steps are myopic: never return worse than the same memory spread uniformly.
  const std::size_t even = std::min(bounds->total / layers, bounds->max_slots);
  std::vector<LayerPlan> uniform;
  double uniform_sum = 0.0;
  uniform.reserve(layers);
  for (std::size_t l = 0; l < layers; ++l) {
    uniform.push_back(plan_one(loads.layer(l), topology.devices, even, balanced));
    uniform_sum += uniform.back().max_load;
  }
  if (uniform_sum < greedy.sum_max()) {
    return to_plan(uniform, std::vector<std::size_t>(layers, even), topology.devices,
                   loads.experts(), bounds->total - layers * even);
  }
  return to_plan(greedy.plans(), std::move(greedy.slots()), topology.devices, loads.experts(),
                 unused);
}

}  // namespace omni::placement
