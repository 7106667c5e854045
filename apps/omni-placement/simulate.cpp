// omni-placement simulate: synthetic drifting windows replayed through each algorithm.
#include <boost/json/serialize.hpp>
#include <cstdio>

#include "commands.hpp"
#include "common.hpp"
#include "omni/common/random.hpp"
#include "omni/placement/simulator.hpp"
#include "omni/placement/synthetic.hpp"

namespace omni::placement::cli {
namespace {

Result<std::vector<SimAlgorithm>> chosen_algorithms(const std::vector<std::string>& names) {
  if (names.empty()) {
    return std::vector<SimAlgorithm>{SimAlgorithm::kStaticEplb, SimAlgorithm::kStaticLayerwise,
                                     SimAlgorithm::kPeriodicEplb, SimAlgorithm::kDynamicRebalance};
  }
  std::vector<SimAlgorithm> algorithms;
  for (const std::string& name : names) {
    auto a = parse_sim_algorithm(name);
    if (!a) return make_error(ErrorCode::kInvalidArgument, "--algorithms: " + a.error().message);
    algorithms.push_back(*a);
  }
  return algorithms;
}

Result<SimOptions> sim_options(const SimulateFlags& flags) {
  TopologyFlags t;
  t.devices = flags.devices;
  t.nodes = flags.nodes;
  t.slots_per_device = flags.slots_per_device != 0 ? flags.slots_per_device
                       : flags.devices == 0
                           ? 0
                           : (flags.experts + flags.devices - 1) / flags.devices + 1;
  auto topology = resolve_topology(t, flags.experts);
  if (!topology) return topology.error();
  if (flags.windows == 0 || flags.layers == 0 || flags.experts == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--windows, --layers and --experts must be at least 1");
  }
  if (!(flags.ema_alpha > 0.0 && flags.ema_alpha <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument, "--ema-alpha must be in (0, 1]");
  }
  auto routing = parse_routing(flags.routing);
  if (!routing) return routing.error();
  SimOptions options;
  options.topology = *topology;
  options.eval.policy = *routing;
  options.num_groups = flags.groups;
  options.replan_period = flags.replan_period;
  options.ema_alpha = flags.ema_alpha;
  options.rebalance.max_moves = flags.move_budget;
  options.rebalance.target_ratio = flags.target_ratio;
  return options;
}

boost::json::object report_json(const SimReport& report) {
  boost::json::array windows;
  for (const WindowReport& w : report.windows) {
    windows.emplace_back(boost::json::object{{"window", w.window},
                                             {"sum_max_device_load", w.sum_max_device_load},
                                             {"mean_imbalance", w.mean_imbalance},
                                             {"cross_node_share", w.cross_node_share},
                                             {"weights_moved", w.weights_moved}});
  }
  return {{"algorithm", sim_algorithm_name(report.algorithm)},
          {"mean_imbalance", report.mean_imbalance},
          {"total_weights_moved", report.total_weights_moved},
          {"windows", std::move(windows)}};
}

double mean_sum_max(const SimReport& report) {
  double total = 0;
  for (const WindowReport& w : report.windows) total += w.sum_max_device_load;
  return report.windows.empty() ? 0.0 : total / static_cast<double>(report.windows.size());
}

}  // namespace

int run_simulate(const SimulateFlags& flags, std::ostream& out, std::ostream& err) {
  auto options = sim_options(flags);
  if (!options) return fail(err, options.error().message);
  auto algorithms = chosen_algorithms(flags.algorithms);
  if (!algorithms) return fail(err, algorithms.error().message);
  SyntheticOptions synthetic;
  synthetic.layers = flags.layers;
  synthetic.experts = flags.experts;
  synthetic.zipf_s = flags.zipf;
  synthetic.drift = flags.drift;
  SeededRandom random(flags.seed);
  const std::vector<LoadMatrix> windows = synthetic_windows(synthetic, flags.windows, random);
  std::vector<SimReport> reports;
  for (SimAlgorithm algorithm : *algorithms) {
    auto report = simulate(windows, algorithm, *options);
    if (!report) return fail(err, report.error().message);
    reports.push_back(std::move(*report));
  }
  if (flags.format == OutputFormat::kJson) {
    boost::json::array list;
    for (const SimReport& r : reports) list.emplace_back(report_json(r));
    out << boost::json::serialize(
               boost::json::object{{"seed", flags.seed}, {"reports", std::move(list)}})
        << "\n";
    return 0;
  }
  char line[160];
  std::snprintf(line, sizeof line, "%-18s %14s %22s %14s\n", "algorithm", "mean max/mean",
                "mean sum of max load", "weights moved");
  out << line;
  for (const SimReport& r : reports) {
    std::snprintf(line, sizeof line, "%-18s %14.4f %22.1f %14zu\n",
                  std::string(sim_algorithm_name(r.algorithm)).c_str(), r.mean_imbalance,
                  mean_sum_max(r), r.total_weights_moved);
    out << line;
  }
  return 0;
}

}  // namespace omni::placement::cli
