#include "omni/placement/rebalance.hpp"

#include <cassert>
#include <string>
#include <utility>

#include "layer_state.hpp"
#include "move_search.hpp"

namespace omni::placement {

LoadSmoother::LoadSmoother(double alpha) : alpha_(alpha) { assert(alpha > 0.0 && alpha <= 1.0); }

Status LoadSmoother::update(const LoadMatrix& fresh) {
  if (!has_value_) {
    smoothed_ = fresh;
    has_value_ = true;
    return ok_status();
  }
  if (fresh.layers() != smoothed_.layers() || fresh.experts() != smoothed_.experts()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "smoother: window shape differs from the earlier windows");
  }
  std::vector<double> values = smoothed_.values();
  const std::vector<double>& incoming = fresh.values();
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = alpha_ * incoming[i] + (1.0 - alpha_) * values[i];
  }
  // Convex combinations of valid loads are valid: make() cannot fail here.
  smoothed_ = LoadMatrix::make(fresh.layers(), fresh.experts(), std::move(values)).value();
  return ok_status();
}

namespace {

using detail::LayerState;

Status check_inputs(const Placement& current, const LoadMatrix& loads, const Topology& topology) {
  if (Status s = topology.validate(); !s) return s;
  if (current.layers.size() != loads.layers() || current.experts != loads.experts() ||
      current.devices != topology.devices) {
    return make_error(ErrorCode::kInvalidArgument,
                      "rebalance: placement, loads and topology disagree in shape");
  }
  return current.validate(true);
}

// A copy of z to fetch from: on the target's node if there is one, else the first.
std::size_t source_slot(const LayerState& s, ExpertId z, std::size_t target_device,
                        const Topology& topology) {
  const std::size_t slots = s.devices() * s.slots_per_device();
  std::size_t first = slots;
  for (std::size_t i = 0; i < slots; ++i) {
    if (s.at(i) != z) continue;
    const std::size_t device = i / s.slots_per_device();
    if (topology.node_of(device) == topology.node_of(target_device)) return i;
    if (first == slots) first = i;
  }
  return first;
}

bool above_target(const LayerState& s, double target_ratio) {
  const double mean = s.mean_load();
  return mean > 0.0 && s.max_load() > target_ratio * mean;
}

// Rounds keep the move order; a move that shares a device with the current round opens the next.
std::size_t assign_rounds(std::vector<Move>& moves, const Topology& topology,
                          const Placement& placement) {
  std::vector<std::size_t> last_round(topology.devices, static_cast<std::size_t>(-1));
  std::size_t round = 0;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    Move& m = moves[i];
    const std::size_t per = placement.layers[m.layer].slots_per_device;
    const std::size_t da = m.slot_a / per;
    const std::size_t db = m.slot_b / per;
    if (i > 0 && (last_round[da] == round || last_round[db] == round)) ++round;
    m.round = round;
    last_round[da] = round;
    last_round[db] = round;
  }
  return moves.empty() ? 0 : round + 1;
}

}  // namespace

Result<RebalancePlan> rebalance(const Placement& current, const LoadMatrix& loads,
                                const Topology& topology, const RebalanceOptions& options) {
  if (Status s = check_inputs(current, loads, topology); !s) return s.error();
  std::vector<LayerState> states;
  states.reserve(loads.layers());
  std::vector<bool> active(loads.layers());
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    states.emplace_back(loads.layer(l), topology.devices, topology.nodes, current.layers[l]);
    active[l] = above_target(states[l], options.target_ratio);
  }
  RebalancePlan plan;
  detail::MoveSearch search;
  while (plan.moves.size() < options.max_moves) {
    std::size_t layer = states.size();
    for (std::size_t l = 0; l < states.size(); ++l) {
      if (active[l] &&
          (layer == states.size() || states[l].max_load() > states[layer].max_load())) {
        layer = l;
      }
    }
    if (layer == states.size()) break;
    LayerState& s = states[layer];
    detail::MoveCandidate c;
    if (!search.best_move(s, c)) {
      active[layer] = false;
      continue;
    }
    Move m;
    m.kind = c.kind;
    m.layer = layer;
    m.slot_a = c.slot_a;
    m.expert_a = s.at(c.slot_a);
    m.max_load_before = s.max_load();
    if (c.kind == MoveKind::kSwap) {
      m.slot_b = c.slot_b;
      m.expert_b = s.at(c.slot_b);
      s.swap_slots(c.slot_a, c.slot_b);
    } else {
      m.slot_b = source_slot(s, c.expert, c.slot_a / s.slots_per_device(), topology);
      m.expert_b = c.expert;
      s.replace(c.slot_a, c.expert);
    }
    m.max_load_after = s.max_load();
    plan.weights_moved += m.weights_moved();
    plan.moves.push_back(m);
    active[layer] = above_target(s, options.target_ratio);
  }
  plan.rounds = assign_rounds(plan.moves, topology, current);
  return plan;
}

void apply_moves(Placement& placement, const std::vector<Move>& moves) {
  for (const Move& m : moves) {
    std::vector<ExpertId>& phy2log = placement.layers[m.layer].phy2log;
    assert(phy2log[m.slot_a] == m.expert_a && phy2log[m.slot_b] == m.expert_b);
    if (m.kind == MoveKind::kSwap) {
      std::swap(phy2log[m.slot_a], phy2log[m.slot_b]);
    } else {
      phy2log[m.slot_a] = m.expert_b;
    }
  }
}

}  // namespace omni::placement
