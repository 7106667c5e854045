// Expert parallelism with live Omni Placement, inside one omni-serve instance.
//
//   placement (omni_placement::Placement: per MoE layer, slots of each rank → logical experts)
//     ├─ slots' weights: copies of the checkpoint's experts in buffers each rank's own workers
//     │  wrote (first touch: NUMA-local when the pool's workers are pinned across nodes)
//     ├─ routing tables (omni_placement::LayerRouting, locality first) → model::ExpertMap
//     └─ live loads: the engine's per-layer expert counts, read between steps
//
//   every step_interval steps, or sooner once a layer's max / mean rank load passes the
//   threshold: smoothed loads → omni_placement::rebalance() → moves (swap / replace), applied
//   between steps: the new slots' weights copied, the table switched (set_expert_map), the old
//   copies freed. Serving never stops; outputs never change (a sequence's rows go to one copy
//   and the combine sums in expert order).
//
// Threading: between_steps() and the constructor on the engine loop's thread; snapshot()
// from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/model/engine.hpp"
#include "omni/placement/model.hpp"
#include "omni/placement/rebalance.hpp"
#include "omni/serve/config.hpp"

namespace omni::serve {

// A copy of one expert's weights (gate, up, down) in memory of its own.
struct SlotWeights {
  std::vector<std::byte> gate, up, down;
  std::vector<float> gate_scale, up_scale, down_scale;  // FP8 block scales
  model::MlpWeights view;
};

struct EpSnapshot {
  int ranks = 0, experts = 0;
  placement::Placement placement;
  std::vector<std::vector<double>> window_expert_loads;  // per MoE layer, the last window
  std::vector<std::vector<double>> window_rank_loads;
  std::vector<std::vector<std::uint64_t>> total_expert_tokens;
  std::vector<std::vector<std::uint64_t>> total_rank_tokens;
  std::vector<double> imbalance;  // per layer: max / mean rank load of the last window
  std::uint64_t rebalances = 0, moves = 0, weights_moved = 0, bytes_moved = 0;
  double moe_seconds = 0;
  double last_move_seconds = 0;
};

class ExpertParallel {
 public:
  // `plan_file`: a JSON plan of `omni-placement plan` (devices = ranks); else a uniform plan
  // with num_redundant_experts extra slots per layer.
  static Result<std::unique_ptr<ExpertParallel>> create(
      model::Engine& engine, const model::LoadedModel& model, int ranks, bool live,
      const EplbConfig& config, const std::optional<std::string>& plan_file);

  void between_steps();
  // Rebalances now (the admin route), whatever the counters say.
  void request_rebalance();
  EpSnapshot snapshot() const;

 private:
  ExpertParallel(model::Engine& engine, const model::LoadedModel& model, int ranks, bool live,
                 EplbConfig config);
  Status install(placement::Placement placement);
  std::shared_ptr<SlotWeights> copy_of(int moe_layer, int expert, int rank);
  void rebalance();

  model::Engine& engine_;
  const model::LoadedModel& model_;
  const int ranks_;
  const bool live_;
  EplbConfig config_;
  std::vector<int> moe_layers_;  // model layer index of each MoE layer
  int experts_ = 0;
  placement::Topology topology_;
  placement::LoadSmoother smoother_;
  // Per MoE layer, per slot: the weights in use (held until the next map replaces them).
  std::vector<std::vector<std::shared_ptr<SlotWeights>>> slots_;
  std::shared_ptr<model::ExpertMap> map_;
  std::vector<std::uint64_t> seen_expert_, seen_slot_;  // counters at the last read
  std::vector<double> window_expert_;                   // [layer][expert] this window
  std::vector<double> window_slot_;
  std::uint32_t window_steps_ = 0, since_rebalance_ = 0;
  bool rebalance_requested_ = false;

  mutable std::mutex mu_;  // guards the snapshot below
  EpSnapshot snap_;
};

}  // namespace omni::serve
