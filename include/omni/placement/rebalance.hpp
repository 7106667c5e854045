// Dynamic rebalancing: a few weight moves from the current placement towards balance.
//
// LoadSmoother keeps an exponential moving average of the observed loads:
//   smoothed = alpha * fresh + (1 - alpha) * smoothed   (the first window is taken as is)
//
// rebalance() repeatedly takes the layer with the highest max device load (even-split model)
// and applies the single move that lowers that layer's max device load most:
//   kSwap     two slots on different devices exchange experts   (2 weight transfers)
//   kReplace  a slot's copy of an expert with >= 2 copies is overwritten by a copy of another
//             expert, fetched from a device that holds it        (1 weight transfer)
// Every move strictly lowers its layer's max device load and never puts two copies of one
// expert on a device. With several nodes, moves also keep each expert's copies spread evenly
// over nodes (as plan_uniform lays them out), so a replace only changes copy counts that stay
// at most `nodes` or a multiple of it. It stops at the move budget, or when every layer is at or
// below the target max/mean ratio, or when no move helps.
//
// Rounds: moves keep their order; a new round starts whenever a move shares a device (as sender
// or receiver) with a move of the current round, so within a round every device takes part in
// at most one transfer and the moves of a round touch disjoint slots.
#pragma once

#include <cstddef>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/placement/model.hpp"

namespace omni::placement {

class LoadSmoother {
 public:
  // alpha in (0, 1]: the weight of the newest window (asserted).
  explicit LoadSmoother(double alpha);

  // kInvalidArgument when the shape differs from the earlier windows.
  Status update(const LoadMatrix& fresh);
  bool has_value() const noexcept { return has_value_; }
  const LoadMatrix& smoothed() const noexcept { return smoothed_; }
  double alpha() const noexcept { return alpha_; }

 private:
  double alpha_;
  bool has_value_ = false;
  LoadMatrix smoothed_;
};

enum class MoveKind { kSwap, kReplace };

struct Move {
  MoveKind kind = MoveKind::kSwap;
  std::size_t layer = 0;
  std::size_t slot_a = 0;  // kSwap: one side; kReplace: the slot overwritten
  std::size_t slot_b = 0;  // kSwap: the other side; kReplace: the source slot copied from
  ExpertId expert_a = 0;   // expert in slot_a before the move
  ExpertId expert_b = 0;   // expert in slot_b before (kReplace: the expert copied)
  std::size_t round = 0;
  double max_load_before = 0.0;  // the layer's max device load before and after
  double max_load_after = 0.0;

  std::size_t weights_moved() const noexcept { return kind == MoveKind::kSwap ? 2 : 1; }
};

struct RebalanceOptions {
  std::size_t max_moves = 32;  // over all layers
  double target_ratio = 1.05;  // stop once every layer's max / mean is at or below this
};

struct RebalancePlan {
  std::vector<Move> moves;  // in application order, rounds non-decreasing
  std::size_t rounds = 0;
  std::size_t weights_moved = 0;
};

// kInvalidArgument when shapes disagree or the placement is invalid (colocated copies are
// accepted in the input, never created).
Result<RebalancePlan> rebalance(const Placement& current, const LoadMatrix& loads,
                                const Topology& topology, const RebalanceOptions& options = {});

// Applies moves in order (asserts they fit the placement).
void apply_moves(Placement& placement, const std::vector<Move>& moves);

}  // namespace omni::placement
