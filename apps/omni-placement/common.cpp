#include "common.hpp"

#include <cstdio>
#include <string_view>

#include "omni/placement/io.hpp"

namespace omni::placement::cli {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

}  // namespace

int fail(std::ostream& err, const std::string& message) {
  err << "omni-placement: " << message << "\n";
  return 2;
}

Result<RoutingPolicy> parse_routing(const std::string& name) {
  if (name == "locality") return RoutingPolicy::kLocalityFirst;
  if (name == "even") return RoutingPolicy::kEvenSplit;
  return invalid("--routing: expected locality or even, got '" + name + "'");
}

Result<Topology> resolve_topology(const TopologyFlags& flags, std::size_t experts) {
  if (flags.devices == 0) return invalid("--devices must be at least 1");
  if (flags.nodes == 0 || flags.devices % flags.nodes != 0) {
    return invalid("--devices (" + std::to_string(flags.devices) +
                   ") must be a multiple of --nodes (" + std::to_string(flags.nodes) + ")");
  }
  Topology topology;
  topology.devices = flags.devices;
  topology.nodes = flags.nodes;
  if (flags.replicas != 0) {
    if (flags.replicas % flags.devices != 0) {
      return invalid("--replicas (" + std::to_string(flags.replicas) +
                     ") must be a multiple of --devices (" + std::to_string(flags.devices) + ")");
    }
    topology.slots_per_device = flags.replicas / flags.devices;
    if (flags.slots_per_device != 0 && flags.slots_per_device != topology.slots_per_device) {
      return invalid("--replicas and --slots-per-device disagree");
    }
  } else if (flags.slots_per_device != 0) {
    topology.slots_per_device = flags.slots_per_device;
  } else {
    topology.slots_per_device = (experts + flags.devices - 1) / flags.devices;
  }
  if (topology.slots() < experts) {
    return invalid("impossible budget: " + std::to_string(topology.slots()) + " slots per layer (" +
                   std::to_string(topology.devices) + " devices x " +
                   std::to_string(topology.slots_per_device) + ") for " + std::to_string(experts) +
                   " experts; every expert needs a slot");
  }
  return topology;
}

Result<Placement> read_placement(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.error();
  const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  Result<Placement> placement = [&]() -> Result<Placement> {
    if (!npy) return placement_from_json(*bytes);
    auto array = parse_npy({reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()});
    if (!array) return array.error();
    return placement_from_pattern(*array);
  }();
  if (!placement)
    return make_error(placement.error().code, path + ": " + placement.error().message);
  return placement;
}

Status check_shapes(const Placement& placement, const LoadMatrix& loads) {
  if (placement.layers.size() != loads.layers() || placement.experts != loads.experts()) {
    return invalid("inconsistent shapes: the placement has " +
                   std::to_string(placement.layers.size()) + " layers x " +
                   std::to_string(placement.experts) + " experts, the loads " +
                   std::to_string(loads.layers()) + " x " + std::to_string(loads.experts()));
  }
  return ok_status();
}

Result<Topology> topology_of(const Placement& placement, std::size_t nodes) {
  Topology topology;
  topology.devices = placement.devices;
  topology.nodes = nodes;
  topology.slots_per_device = placement.layers.empty() ? 1 : placement.layers[0].slots_per_device;
  if (Status s = topology.validate(); !s) {
    return invalid("--nodes: " + s.error().message);
  }
  return topology;
}

boost::json::object metrics_json(const PlacementMetrics& metrics) {
  boost::json::object doc;
  doc["sum_max_device_load"] = metrics.sum_max_device_load;
  doc["mean_imbalance"] = metrics.mean_imbalance;
  doc["cross_node_share"] = metrics.cross_node_share;
  boost::json::array layers;
  for (const LayerMetrics& l : metrics.layers) {
    layers.emplace_back(boost::json::object{{"max_device_load", l.max_device_load},
                                            {"mean_device_load", l.mean_device_load},
                                            {"imbalance", l.imbalance},
                                            {"cross_node_tokens", l.cross_node_tokens}});
  }
  doc["layers"] = std::move(layers);
  return doc;
}

void print_metrics(std::ostream& out, const PlacementMetrics& metrics) {
  char line[160];
  std::snprintf(line, sizeof line, "%-6s %16s %16s %10s %14s\n", "layer", "max_device_load",
                "mean_device_load", "max/mean", "cross_node");
  out << line;
  for (std::size_t l = 0; l < metrics.layers.size(); ++l) {
    const LayerMetrics& m = metrics.layers[l];
    std::snprintf(line, sizeof line, "%-6zu %16.1f %16.1f %10.4f %14.1f\n", l, m.max_device_load,
                  m.mean_device_load, m.imbalance, m.cross_node_tokens);
    out << line;
  }
  std::snprintf(
      line, sizeof line,
      "sum over layers of max device load: %.1f\nmean max/mean: %.4f\ncross-node share: %.4f\n",
      metrics.sum_max_device_load, metrics.mean_imbalance, metrics.cross_node_share);
  out << line;
}

}  // namespace omni::placement::cli
