#include "omni/placement/routing.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>

namespace omni::placement {

namespace {

// Slots of each expert, grouped by expert (CSR).
struct CopyIndex {
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> slots;

  CopyIndex(const LayerPlacement& layer, std::size_t experts) : offsets(experts + 1, 0) {
    for (ExpertId e : layer.phy2log) ++offsets[static_cast<std::size_t>(e) + 1];
    for (std::size_t e = 0; e < experts; ++e) offsets[e + 1] += offsets[e];
    slots.resize(layer.phy2log.size());
    std::vector<std::uint32_t> fill(offsets.begin(), offsets.end() - 1);
    for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
      slots[fill[static_cast<std::size_t>(layer.phy2log[s])]++] = static_cast<std::uint32_t>(s);
    }
  }
  std::span<const std::uint32_t> of(std::size_t e) const {
    return {slots.data() + offsets[e], offsets[e + 1] - offsets[e]};
  }
};

}  // namespace

LayerRouting LayerRouting::build(const LayerPlacement& layer, const Topology& topology,
                                 std::size_t experts, RoutingPolicy policy) {
  LayerRouting r;
  r.devices_ = topology.devices;
  r.experts_ = experts;
  r.offsets_.reserve(r.devices_ * experts + 1);
  r.offsets_.push_back(0);
  const CopyIndex copies(layer, experts);
  const std::size_t per_node = topology.devices_per_node();
  for (std::size_t src = 0; src < r.devices_; ++src) {
    const std::size_t node = topology.node_of(src);
    for (std::size_t e = 0; e < experts; ++e) {
      const auto all = copies.of(e);
      const std::size_t begin = r.targets_.size();
      if (policy == RoutingPolicy::kLocalityFirst) {
        for (std::uint32_t s : all) {
          if (layer.device_of_slot(s) == src) r.targets_.push_back(s);
        }
        if (r.targets_.size() == begin) {
          for (std::uint32_t s : all) {
            if (layer.device_of_slot(s) / per_node == node) r.targets_.push_back(s);
          }
        }
      }
      if (r.targets_.size() == begin) r.targets_.insert(r.targets_.end(), all.begin(), all.end());
      r.offsets_.push_back(static_cast<std::uint32_t>(r.targets_.size()));
    }
  }
  return r;
}

namespace {

// Visits (source device, target slot, tokens) for every routed share.
template <class Visit>
void for_each_share(const LayerRouting& routing, std::span<const double> expert_loads,
                    std::span<const double> origin, Visit&& visit) {
  const std::size_t devices = routing.devices();
  const double uniform = 1.0 / static_cast<double>(devices);
  for (std::size_t src = 0; src < devices; ++src) {
    const double share = origin.empty() ? uniform : origin[src];
    for (std::size_t e = 0; e < routing.experts(); ++e) {
      const auto targets = routing.targets(src, e);
      if (targets.empty()) continue;
      const double tokens = expert_loads[e] * share / static_cast<double>(targets.size());
      for (std::uint32_t slot : targets) visit(src, slot, tokens);
    }
  }
}

}  // namespace

std::vector<double> slot_loads(const LayerPlacement& layer, const LayerRouting& routing,
                               const Topology& /*topology*/, std::span<const double> expert_loads,
                               std::span<const double> origin) {
  std::vector<double> loads(layer.phy2log.size(), 0.0);
  for_each_share(routing, expert_loads, origin,
                 [&](std::size_t, std::uint32_t slot, double tokens) { loads[slot] += tokens; });
  return loads;
}

std::vector<double> device_loads(const LayerPlacement& layer, std::span<const double> expert_loads,
                                 const Topology& topology, const EvalOptions& options) {
  const LayerRouting routing =
      LayerRouting::build(layer, topology, expert_loads.size(), options.policy);
  const std::vector<double> per_slot =
      slot_loads(layer, routing, topology, expert_loads, options.origin);
  std::vector<double> per_device(topology.devices, 0.0);
  for (std::size_t s = 0; s < per_slot.size(); ++s) {
    per_device[layer.device_of_slot(s)] += per_slot[s];
  }
  return per_device;
}

namespace {

LayerMetrics layer_metrics(const LayerPlacement& layer, std::span<const double> expert_loads,
                           const Topology& topology, const EvalOptions& options) {
  const LayerRouting routing =
      LayerRouting::build(layer, topology, expert_loads.size(), options.policy);
  std::vector<double> per_device(topology.devices, 0.0);
  LayerMetrics m;
  for_each_share(routing, expert_loads, options.origin,
                 [&](std::size_t src, std::uint32_t slot, double tokens) {
                   const std::size_t device = layer.device_of_slot(slot);
                   per_device[device] += tokens;
                   if (topology.node_of(device) != topology.node_of(src)) {
                     m.cross_node_tokens += tokens;
                   }
                 });
  for (double load : per_device) m.total_tokens += load;
  m.max_device_load = *std::max_element(per_device.begin(), per_device.end());
  m.mean_device_load = m.total_tokens / static_cast<double>(topology.devices);
  m.imbalance = m.mean_device_load > 0.0 ? m.max_device_load / m.mean_device_load : 1.0;
  return m;
}

Status check_shapes(const Placement& placement, const LoadMatrix& loads, const Topology& topology,
                    const EvalOptions& options) {
  auto bad = [](const std::string& why) {
    return Status(make_error(ErrorCode::kInvalidArgument, "evaluate: " + why));
  };
  if (Status s = topology.validate(); !s) return s;
  if (placement.layers.size() != loads.layers()) return bad("placement and loads differ in layers");
  if (placement.experts != loads.experts()) return bad("placement and loads differ in experts");
  if (placement.devices != topology.devices) return bad("placement and topology differ in devices");
  if (!options.origin.empty()) {
    if (options.origin.size() != topology.devices) return bad("origin needs one share per device");
    double sum = 0.0;
    for (double share : options.origin) {
      if (!std::isfinite(share) || share < 0.0) return bad("origin shares must be finite and >= 0");
      sum += share;
    }
    if (std::abs(sum - 1.0) > 1e-9) return bad("origin shares must sum to 1");
  }
  return placement.validate(true);
}

}  // namespace

Result<PlacementMetrics> evaluate(const Placement& placement, const LoadMatrix& loads,
                                  const Topology& topology, const EvalOptions& options) {
  if (Status s = check_shapes(placement, loads, topology, options); !s) return s.error();
  PlacementMetrics out;
  out.layers.reserve(loads.layers());
  double imbalance_sum = 0.0;
  double cross = 0.0;
  double total = 0.0;
  for (std::size_t l = 0; l < loads.layers(); ++l) {
    const LayerMetrics m = layer_metrics(placement.layers[l], loads.layer(l), topology, options);
    out.sum_max_device_load += m.max_device_load;
    imbalance_sum += m.imbalance;
    cross += m.cross_node_tokens;
    total += m.total_tokens;
    out.layers.push_back(m);
  }
  out.mean_imbalance = imbalance_sum / static_cast<double>(loads.layers());
  out.cross_node_share = total > 0.0 ? cross / total : 0.0;
  return out;
}

double even_split_max_load(const LayerPlacement& layer, std::span<const double> expert_loads,
                           std::size_t devices) {
  std::vector<std::size_t> count(expert_loads.size(), 0);
  for (ExpertId e : layer.phy2log) ++count[static_cast<std::size_t>(e)];
  std::vector<double> per_device(devices, 0.0);
  for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
    const auto e = static_cast<std::size_t>(layer.phy2log[s]);
    per_device[layer.device_of_slot(s)] += expert_loads[e] / static_cast<double>(count[e]);
  }
  return *std::max_element(per_device.begin(), per_device.end());
}

}  // namespace omni::placement
