// omni-placement evaluate | rebalance: an existing placement against fresh loads.
#include <boost/json/serialize.hpp>

#include "commands.hpp"
#include "common.hpp"
#include "omni/placement/io.hpp"
#include "omni/placement/rebalance.hpp"

namespace omni::placement::cli {
namespace {

std::string_view move_kind_name(MoveKind kind) {
  return kind == MoveKind::kSwap ? "swap" : "replace";
}

boost::json::array moves_json(const std::vector<Move>& moves) {
  boost::json::array list;
  for (const Move& m : moves) {
    list.emplace_back(boost::json::object{{"round", m.round},
                                          {"layer", m.layer},
                                          {"kind", move_kind_name(m.kind)},
                                          {"slot_a", m.slot_a},
                                          {"slot_b", m.slot_b},
                                          {"expert_a", m.expert_a},
                                          {"expert_b", m.expert_b},
                                          {"max_load_before", m.max_load_before},
                                          {"max_load_after", m.max_load_after}});
  }
  return list;
}

// The EMA of the windows given, oldest first.
Result<LoadMatrix> smoothed_loads(const std::vector<std::string>& paths, double alpha) {
  if (paths.empty()) return make_error(ErrorCode::kInvalidArgument, "--loads is required");
  if (!(alpha > 0.0 && alpha <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "--ema-alpha must be in (0, 1]");
  }
  LoadSmoother smoother(alpha);
  for (const std::string& path : paths) {
    auto window = read_loads_file(path);
    if (!window) return window.error();
    if (Status s = smoother.update(*window); !s) {
      return make_error(s.error().code, path + ": inconsistent shapes: " + s.error().message);
    }
  }
  return smoother.smoothed();
}

}  // namespace

int run_evaluate(const EvaluateFlags& flags, std::ostream& out, std::ostream& err) {
  auto placement = read_placement(flags.placement);
  if (!placement) return fail(err, placement.error().message);
  auto loads = read_loads_file(flags.loads);
  if (!loads) return fail(err, loads.error().message);
  if (Status s = check_shapes(*placement, *loads); !s) return fail(err, s.error().message);
  auto topology = topology_of(*placement, flags.nodes);
  if (!topology) return fail(err, topology.error().message);
  auto routing = parse_routing(flags.routing);
  if (!routing) return fail(err, routing.error().message);
  EvalOptions eval;
  eval.policy = *routing;
  auto metrics = evaluate(*placement, *loads, *topology, eval);
  if (!metrics) return fail(err, metrics.error().message);
  if (flags.format == OutputFormat::kJson) {
    out << boost::json::serialize(boost::json::object{{"metrics", metrics_json(*metrics)}}) << "\n";
  } else {
    print_metrics(out, *metrics);
  }
  return 0;
}

int run_rebalance(const RebalanceFlags& flags, std::ostream& out, std::ostream& err) {
  auto placement = read_placement(flags.placement);
  if (!placement) return fail(err, placement.error().message);
  auto loads = smoothed_loads(flags.loads, flags.ema_alpha);
  if (!loads) return fail(err, loads.error().message);
  if (Status s = check_shapes(*placement, *loads); !s) return fail(err, s.error().message);
  auto topology = topology_of(*placement, flags.nodes);
  if (!topology) return fail(err, topology.error().message);
  if (!(flags.target_ratio >= 1.0)) return fail(err, "--target-ratio must be at least 1");
  auto before = evaluate(*placement, *loads, *topology);
  if (!before) return fail(err, before.error().message);
  RebalanceOptions options;
  options.max_moves = flags.move_budget;
  options.target_ratio = flags.target_ratio;
  auto plan = rebalance(*placement, *loads, *topology, options);
  if (!plan) return fail(err, plan.error().message);
  Placement after_placement = *placement;
  apply_moves(after_placement, plan->moves);
  auto after = evaluate(after_placement, *loads, *topology);
  if (!after) return fail(err, after.error().message);
  if (!flags.pattern_out.empty()) {
    auto bytes = pattern_to_npy(after_placement);
    if (!bytes) return fail(err, "--pattern-out: " + bytes.error().message);
    if (Status s = write_file(flags.pattern_out, *bytes); !s) return fail(err, s.error().message);
  }
  if (flags.format == OutputFormat::kJson) {
    boost::json::object doc = placement_to_json(after_placement);
    doc["moves"] = moves_json(plan->moves);
    doc["rounds"] = plan->rounds;
    doc["weights_moved"] = plan->weights_moved;
    doc["metrics_before"] = metrics_json(*before);
    doc["metrics"] = metrics_json(*after);
    out << boost::json::serialize(doc) << "\n";
    return 0;
  }
  out << plan->moves.size() << " moves in " << plan->rounds << " rounds, " << plan->weights_moved
      << " expert weights moved\n";
  for (const Move& m : plan->moves) {
    out << "round " << m.round << " layer " << m.layer << ' ' << move_kind_name(m.kind) << " slot "
        << m.slot_a << " (expert " << m.expert_a << ") <- slot " << m.slot_b << " (expert "
        << m.expert_b << "): max load " << m.max_load_before << " -> " << m.max_load_after << "\n";
  }
  out << "before: sum of max device load " << before->sum_max_device_load << ", mean max/mean "
      << before->mean_imbalance << "\nafter:  sum of max device load " << after->sum_max_device_load
      << ", mean max/mean " << after->mean_imbalance << "\n";
  return 0;
}

}  // namespace omni::placement::cli
