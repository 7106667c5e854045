// EPLB-compatible static planning: DeepSeek's Expert Parallelism Load Balancer, reproduced.
//
// Semantics follow deepseek-ai/EPLB (eplb.py) exactly, including its float32 arithmetic and
// its tie-breaking (a stable descending sort; the lowest index wins among equal maxima/minima),
// so the same weights give the same phy2log:
//
//   hierarchical (num_groups % num_nodes == 0)        global (otherwise)
//     1. pack expert groups onto nodes                  one node, one group:
//     2. replicate experts within each node               replicate, then pack
//     3. pack physical experts onto GPUs of the node      physical experts onto all GPUs
//
// balanced_packing puts the heaviest remaining item into the lightest pack that still has room;
// replicate_experts repeatedly gives one more copy to the expert with the highest load per copy.
// EPLB's packing may put two copies of one expert on one GPU (Placement::validate(true)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/placement/model.hpp"

namespace omni::placement {

struct Packing {
  std::vector<std::size_t> pack_index;    // per item: the pack it goes to
  std::vector<std::size_t> rank_in_pack;  // per item: its position inside that pack
};

// Packs weights.size() items into num_packs packs of exactly size/num_packs items each.
// Requires num_packs > 0 and weights.size() % num_packs == 0 (asserted).
Packing balanced_packing(std::span<const float> weights, std::size_t num_packs);

struct Replication {
  std::vector<ExpertId> phy2log;    // num_phy entries; the first weights.size() are 0..n-1
  std::vector<std::size_t> rank;    // replica rank of each physical expert (0 = original)
  std::vector<std::size_t> logcnt;  // copies of each logical expert
};

// Replicates weights.size() logical experts into num_phy >= weights.size() physical experts.
Replication replicate_experts(std::span<const float> weights, std::size_t num_phy);

struct EplbParams {
  std::size_t num_replicas = 0;  // physical experts per layer; a multiple of num_gpus
  std::size_t num_groups = 1;    // expert groups; experts % num_groups == 0
  std::size_t num_nodes = 1;     // hosts; num_gpus % num_nodes == 0
  std::size_t num_gpus = 1;

  // The parameters for a topology: replicas = devices * slots_per_device.
  static EplbParams for_topology(const Topology& topology, std::size_t num_groups);
};

struct EplbResult {
  std::size_t layers = 0;
  std::size_t experts = 0;
  std::size_t replicas = 0;
  std::size_t max_logcnt = 0;  // the widest log2phy row
  // [layer][physical expert] = logical expert
  std::vector<std::vector<ExpertId>> phy2log;
  // [layer][logical expert][replica rank] = physical expert, -1 padded to max_logcnt
  std::vector<std::vector<std::vector<std::int64_t>>> log2phy;
  // [layer][logical expert] = number of copies
  std::vector<std::vector<std::size_t>> logcnt;

  // The same plan in the shared data model (replicas / gpus slots per device).
  Placement to_placement(std::size_t num_gpus) const;
};

// kInvalidArgument when the shape rules above do not hold, or replicas < experts.
Result<EplbResult> eplb_rebalance(const LoadMatrix& loads, const EplbParams& params);

// Convenience: eplb_rebalance(loads, for_topology(topology, num_groups)).to_placement(...).
Result<Placement> eplb_plan(const LoadMatrix& loads, const Topology& topology,
                            std::size_t num_groups);

}  // namespace omni::placement
