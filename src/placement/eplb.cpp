// EPLB reproduced. Arithmetic is float32 on purpose: eplb.py converts the weights with
// .float(), and its comparisons (and so its ties) happen in float32.
#include "omni/placement/eplb.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <string>
#include <utility>

namespace omni::placement {

Packing balanced_packing(std::span<const float> weights, std::size_t num_packs) {
  const std::size_t n = weights.size();
  assert(num_packs > 0 && n % num_packs == 0);
  const std::size_t per_pack = n / num_packs;
  Packing out;
  out.pack_index.assign(n, 0);
  out.rank_in_pack.assign(n, 0);
  if (per_pack == 1) {
    std::iota(out.pack_index.begin(), out.pack_index.end(), std::size_t{0});
    return out;
  }
  // torch.sort(descending=True) on the CPU is stable: equal weights keep index order.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return weights[a] > weights[b]; });
  std::vector<float> pack_weight(num_packs, 0.0F);
  std::vector<std::size_t> pack_items(num_packs, 0);
  for (std::size_t item : order) {
    std::size_t best = num_packs;
    for (std::size_t p = 0; p < num_packs; ++p) {
      if (pack_items[p] >= per_pack) continue;
      if (best == num_packs || pack_weight[p] < pack_weight[best]) best = p;  // first minimum
    }
    assert(best < num_packs);
    out.pack_index[item] = best;
    out.rank_in_pack[item] = pack_items[best];
    pack_weight[best] += weights[item];
    ++pack_items[best];
  }
  return out;
}

Replication replicate_experts(std::span<const float> weights, std::size_t num_phy) {
  const std::size_t n = weights.size();
  assert(num_phy >= n && n > 0);
  Replication out;
  out.phy2log.resize(num_phy);
  out.rank.assign(num_phy, 0);
  out.logcnt.assign(n, 1);
  for (std::size_t i = 0; i < n; ++i) out.phy2log[i] = static_cast<ExpertId>(i);
  for (std::size_t i = n; i < num_phy; ++i) {
    std::size_t best = 0;
    float best_value = weights[0] / static_cast<float>(out.logcnt[0]);
    for (std::size_t e = 1; e < n; ++e) {
      const float value = weights[e] / static_cast<float>(out.logcnt[e]);
      if (value > best_value) {  // torch.max returns the first maximal index
        best = e;
        best_value = value;
      }
    }
    out.phy2log[i] = static_cast<ExpertId>(best);
    out.rank[i] = out.logcnt[best];
    ++out.logcnt[best];
  }
  return out;
}

EplbParams EplbParams::for_topology(const Topology& topology, std::size_t num_groups) {
  return EplbParams{topology.slots(), num_groups, topology.nodes, topology.devices};
}

namespace {

struct LayerOut {
  std::vector<ExpertId> phy2log;
  std::vector<std::size_t> rank;
  std::vector<std::size_t> logcnt;
};

// Step 1: whole expert groups onto nodes; returns log2mlog (node-major "middle" numbering).
std::vector<std::size_t> pack_groups(std::span<const float> w, std::size_t groups,
                                     std::size_t nodes) {
  const std::size_t group_size = w.size() / groups;
  std::vector<float> group_tokens(groups, 0.0F);
  for (std::size_t e = 0; e < w.size(); ++e) group_tokens[e / group_size] += w[e];
  const Packing packing = balanced_packing(group_tokens, nodes);
  const std::size_t groups_per_node = groups / nodes;
  std::vector<std::size_t> log2mlog(w.size());
  for (std::size_t e = 0; e < w.size(); ++e) {
    const std::size_t g = e / group_size;
    log2mlog[e] = (packing.pack_index[g] * groups_per_node + packing.rank_in_pack[g]) * group_size +
                  e % group_size;
  }
  return log2mlog;
}

// Steps 2 and 3 for one node: replicate its experts, then pack the copies onto its GPUs.
void plan_node(std::span<const float> node_tokens, std::size_t node, std::size_t phy_per_node,
               std::size_t gpus_per_node, std::span<const std::size_t> mlog2log,
               std::vector<std::size_t>& mlogcnt_all, LayerOut& out) {
  const std::size_t mlog_per_node = node_tokens.size();
  const Replication rep = replicate_experts(node_tokens, phy_per_node);
  std::vector<float> per_copy(phy_per_node);
  for (std::size_t p = 0; p < phy_per_node; ++p) {
    const auto m = static_cast<std::size_t>(rep.phy2log[p]);
    per_copy[p] = node_tokens[m] / static_cast<float>(rep.logcnt[m]);
  }
  const Packing packing = balanced_packing(per_copy, gpus_per_node);
  const std::size_t per_gpu = phy_per_node / gpus_per_node;
  for (std::size_t p = 0; p < phy_per_node; ++p) {
    const std::size_t local = packing.pack_index[p] * per_gpu + packing.rank_in_pack[p];
    const std::size_t slot = node * phy_per_node + local;
    const std::size_t mlog = node * mlog_per_node + static_cast<std::size_t>(rep.phy2log[p]);
    out.phy2log[slot] = static_cast<ExpertId>(mlog2log[mlog]);
    out.rank[slot] = rep.rank[p];
  }
  for (std::size_t m = 0; m < mlog_per_node; ++m) {
    mlogcnt_all[node * mlog_per_node + m] = rep.logcnt[m];
  }
}

LayerOut plan_hierarchical(std::span<const float> w, std::size_t replicas, std::size_t groups,
                           std::size_t nodes, std::size_t gpus) {
  const std::size_t experts = w.size();
  const std::vector<std::size_t> log2mlog = pack_groups(w, groups, nodes);
  std::vector<std::size_t> mlog2log(experts);
  for (std::size_t e = 0; e < experts; ++e) mlog2log[log2mlog[e]] = e;

  LayerOut out;
  out.phy2log.assign(replicas, 0);
  out.rank.assign(replicas, 0);
  std::vector<std::size_t> mlogcnt(experts, 0);
  const std::size_t mlog_per_node = experts / nodes;
  std::vector<float> node_tokens(mlog_per_node);
  for (std::size_t node = 0; node < nodes; ++node) {
    for (std::size_t m = 0; m < mlog_per_node; ++m) {
      node_tokens[m] = w[mlog2log[node * mlog_per_node + m]];
    }
    plan_node(node_tokens, node, replicas / nodes, gpus / nodes, mlog2log, mlogcnt, out);
  }
  out.logcnt.resize(experts);
  for (std::size_t e = 0; e < experts; ++e) out.logcnt[e] = mlogcnt[log2mlog[e]];
  return out;
}

Status check_params(const LoadMatrix& loads, const EplbParams& p) {
  auto bad = [](const std::string& why) {
    return Status(make_error(ErrorCode::kInvalidArgument, "eplb: " + why));
  };
  if (loads.layers() == 0 || loads.experts() == 0) return bad("empty load matrix");
  if (p.num_gpus == 0 || p.num_nodes == 0 || p.num_groups == 0) {
    return bad("num_gpus, num_nodes and num_groups must be > 0");
  }
  if (p.num_replicas < loads.experts()) {
    return bad("num_replicas (" + std::to_string(p.num_replicas) + ") < experts (" +
               std::to_string(loads.experts()) + ")");
  }
  if (p.num_replicas % p.num_gpus != 0) return bad("num_replicas must be a multiple of num_gpus");
  if (p.num_gpus % p.num_nodes != 0) return bad("num_gpus must be a multiple of num_nodes");
  if (loads.experts() % p.num_groups != 0) return bad("experts must be a multiple of num_groups");
  return ok_status();
}

}  // namespace

Result<EplbResult> eplb_rebalance(const LoadMatrix& loads, const EplbParams& params) {
  if (Status s = check_params(loads, params); !s) return s.error();
  const bool hierarchical = params.num_groups % params.num_nodes == 0;
  const std::size_t groups = hierarchical ? params.num_groups : 1;
  const std::size_t nodes = hierarchical ? params.num_nodes : 1;

  EplbResult result;
  result.layers = loads.layers();
  result.experts = loads.experts();
  result.replicas = params.num_replicas;
  std::vector<float> w(loads.experts());
  std::vector<LayerOut> layers;
  layers.reserve(loads.layers());
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    const auto row = loads.layer(l);
    for (std::size_t e = 0; e < w.size(); ++e) w[e] = static_cast<float>(row[e]);
    layers.push_back(plan_hierarchical(w, params.num_replicas, groups, nodes, params.num_gpus));
    result.max_logcnt = std::max(result.max_logcnt, *std::max_element(layers.back().logcnt.begin(),
                                                                      layers.back().logcnt.end()));
  }
  for (LayerOut& layer : layers) {
    std::vector<std::vector<std::int64_t>> log2phy(
        result.experts, std::vector<std::int64_t>(result.max_logcnt, -1));
    for (std::size_t p = 0; p < layer.phy2log.size(); ++p) {
      log2phy[static_cast<std::size_t>(layer.phy2log[p])][layer.rank[p]] =
          static_cast<std::int64_t>(p);
    }
    result.phy2log.push_back(std::move(layer.phy2log));
    result.log2phy.push_back(std::move(log2phy));
    result.logcnt.push_back(std::move(layer.logcnt));
  }
  return result;
}

Placement EplbResult::to_placement(std::size_t num_gpus) const {
  Placement p;
  p.devices = num_gpus;
  p.experts = experts;
  p.layers.reserve(layers);
  for (const auto& row : phy2log) p.layers.push_back(LayerPlacement{replicas / num_gpus, row});
  return p;
}

Result<Placement> eplb_plan(const LoadMatrix& loads, const Topology& topology,
                            std::size_t num_groups) {
  if (Status s = topology.validate(); !s) return s.error();
  auto result = eplb_rebalance(loads, EplbParams::for_topology(topology, num_groups));
  if (!result) return result.error();
  return result->to_placement(topology.devices);
}

}  // namespace omni::placement
