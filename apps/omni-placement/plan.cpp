// omni-placement plan: a static placement from one window of loads.
#include <boost/json/serialize.hpp>

#include "commands.hpp"
#include "common.hpp"
#include "omni/placement/balanced.hpp"
#include "omni/placement/eplb.hpp"
#include "omni/placement/io.hpp"

namespace omni::placement::cli {
namespace {

Result<Placement> make_plan(const PlanFlags& flags, const LoadMatrix& loads,
                            const Topology& topology) {
  if (flags.algorithm == "eplb") return eplb_plan(loads, topology, flags.groups);
  if (flags.algorithm == "uniform") return plan_uniform(loads, topology);
  if (flags.algorithm == "layerwise") {
    LayerwiseOptions options;
    options.total_slots_per_device = flags.slot_budget;
    auto plan = plan_layerwise(loads, topology, options);
    if (!plan) return plan.error();
    return std::move(plan->placement);
  }
  return make_error(
      ErrorCode::kInvalidArgument,
      "--algorithm: expected eplb, layerwise or uniform, got '" + flags.algorithm + "'");
}

Status write_pattern(const std::string& path, const std::string& dtype,
                     const Placement& placement) {
  if (dtype != "int32" && dtype != "bool") {
    return make_error(ErrorCode::kInvalidArgument, "--pattern-dtype: expected int32 or bool");
  }
  auto bytes =
      pattern_to_npy(placement, dtype == "bool" ? PatternDtype::kBool : PatternDtype::kInt32);
  if (!bytes) return make_error(bytes.error().code, "--pattern-out: " + bytes.error().message);
  return write_file(path, *bytes);
}

}  // namespace

int run_plan(const PlanFlags& flags, std::ostream& out, std::ostream& err) {
  auto loads = read_loads_file(flags.loads);
  if (!loads) return fail(err, loads.error().message);
  auto topology = resolve_topology(flags.topology, loads->experts());
  if (!topology) return fail(err, topology.error().message);
  if (flags.slot_budget != 0 && flags.algorithm != "layerwise") {
    return fail(err, "--slot-budget applies to --algorithm layerwise only");
  }
  auto routing = parse_routing(flags.routing);
  if (!routing) return fail(err, routing.error().message);
  auto placement = make_plan(flags, *loads, *topology);
  if (!placement) return fail(err, placement.error().message);
  EvalOptions eval;
  eval.policy = *routing;
  auto metrics = evaluate(*placement, *loads, *topology, eval);
  if (!metrics) return fail(err, metrics.error().message);
  if (!flags.pattern_out.empty()) {
    if (Status s = write_pattern(flags.pattern_out, flags.pattern_dtype, *placement); !s) {
      return fail(err, s.error().message);
    }
  }
  if (flags.format == OutputFormat::kJson) {
    boost::json::object doc = placement_to_json(*placement);
    doc["algorithm"] = flags.algorithm;
    doc["metrics"] = metrics_json(*metrics);
    out << boost::json::serialize(doc) << "\n";
    return 0;
  }
  out << "algorithm " << flags.algorithm << ": " << loads->layers() << " layers x "
      << loads->experts() << " experts on " << topology->devices << " devices (" << topology->nodes
      << " nodes)\n";
  for (std::size_t l = 0; l < placement->layers.size(); ++l) {
    out << "layer " << l << " (" << placement->layers[l].slots_per_device << " slots/device):";
    for (ExpertId e : placement->layers[l].phy2log) out << ' ' << e;
    out << "\n";
  }
  print_metrics(out, *metrics);
  return 0;
}

}  // namespace omni::placement::cli
