// Internal: finds the single move that lowers one layer's max device load most.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "layer_state.hpp"
#include "omni/placement/model.hpp"
#include "omni/placement/rebalance.hpp"

namespace omni::placement::detail {

struct MoveCandidate {
  MoveKind kind = MoveKind::kSwap;
  std::size_t slot_a = 0;  // kSwap: on the max device; kReplace: the slot overwritten
  std::size_t slot_b = 0;  // kSwap: the other side; kReplace: unused (source chosen later)
  ExpertId expert = 0;     // kReplace: the expert copied in
  double new_max = 0.0;
};

// Scratch buffers reused across searches so a search allocates nothing after warm-up.
class MoveSearch {
 public:
  // Returns false when no move strictly lowers the layer's max device load.
  bool best_move(const LayerState& state, MoveCandidate& out);

 private:
  void index_copies(const LayerState& state);
  void scan_swaps(const LayerState& state, std::size_t top);
  void scan_replace(const LayerState& state, std::size_t slot, ExpertId z);
  double max_after(const LayerState& state);
  void add_delta(std::size_t device, double delta);

  std::vector<std::size_t> by_load_;         // devices, most loaded first
  std::vector<std::uint32_t> copy_offsets_;  // slots of each expert (CSR)
  std::vector<std::uint32_t> copy_slots_;
  std::vector<double> delta_;  // per device, valid where stamp_ == epoch_
  std::vector<std::uint64_t> stamp_;
  std::vector<std::size_t> touched_;
  std::uint64_t epoch_ = 0;
  MoveCandidate best_;
  bool found_ = false;
};

}  // namespace omni::placement::detail
