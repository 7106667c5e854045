// Helpers shared by the subcommands: topology from flags, reading plans, reporting metrics.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <ostream>
#include <string>

#include "commands.hpp"
#include "omni/common/result.hpp"
#include "omni/placement/model.hpp"
#include "omni/placement/routing.hpp"

namespace omni::placement::cli {

// Prints "omni-placement: <message>" and returns the exit status for bad input (2).
int fail(std::ostream& err, const std::string& message);

Result<RoutingPolicy> parse_routing(const std::string& name);

// Devices, nodes and slots per device from the flags, checked against the experts to place:
// fewer slots per layer than experts is an impossible budget.
Result<Topology> resolve_topology(const TopologyFlags& flags, std::size_t experts);

// A plan JSON written by `plan --format json`, or a pattern .npy (by extension).
Result<Placement> read_placement(const std::string& path);

// kInvalidArgument unless the placement and the loads agree on layers and experts.
Status check_shapes(const Placement& placement, const LoadMatrix& loads);

// The placement's topology: its devices, `nodes` hosts; slots_per_device from layer 0.
Result<Topology> topology_of(const Placement& placement, std::size_t nodes);

boost::json::object metrics_json(const PlacementMetrics& metrics);
void print_metrics(std::ostream& out, const PlacementMetrics& metrics);

}  // namespace omni::placement::cli
