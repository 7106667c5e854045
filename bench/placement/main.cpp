// omni-placement-bench: planning and rebalancing time, and plan quality at equal memory, on
// synthetic skewed loads of the DeepSeek-V3 shape (58 layers x 256 experts), and a sweep of
// memory budgets between whole slots per device (layer-wise vs uniform and EPLB at the same
// memory). Prints one JSON object; bench/placement/run.sh turns it into a table and
// bench/results/placement.json.
//
//   omni-placement-bench [seed] [repeats] [zipf_s]
#include <algorithm>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "omni/common/random.hpp"
#include "omni/placement/balanced.hpp"
#include "omni/placement/eplb.hpp"
#include "omni/placement/rebalance.hpp"
#include "omni/placement/routing.hpp"
#include "omni/placement/synthetic.hpp"

namespace omni::placement {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kLayers = 58;
constexpr std::size_t kExperts = 256;
constexpr std::size_t kGroups = 8;  // DeepSeek-V3's expert groups

// Median wall time in milliseconds of `repeats` calls.
double median_ms(std::size_t repeats, const std::function<void()>& call) {
  std::vector<double> times;
  for (std::size_t i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Topology topology(std::size_t devices, std::size_t nodes, std::size_t slots) {
  Topology t;
  t.devices = devices;
  t.nodes = nodes;
  t.slots_per_device = slots;
  return t;
}

template <class T>
T must(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::cerr << what << ": " << r.error().to_string() << "\n";
    std::exit(1);
  }
  return std::move(r).value();
}

boost::json::object timing(const LoadMatrix& loads, std::size_t repeats) {
  const Topology t64 = topology(64, 8, kExperts / 64 + 1);
  boost::json::object out;
  out["shape"] = "58x256 on 64 devices (8 nodes), 5 slots per device";
  out["eplb_ms"] = median_ms(repeats, [&] { must(eplb_plan(loads, t64, kGroups), "eplb"); });
  out["uniform_ms"] = median_ms(repeats, [&] { must(plan_uniform(loads, t64), "uniform"); });
  out["layerwise_ms"] = median_ms(repeats, [&] { must(plan_layerwise(loads, t64), "layerwise"); });
  return out;
}

boost::json::object rebalance_timing(const LoadMatrix& initial, const LoadMatrix& drifted,
                                     std::size_t repeats) {
  const Topology t = topology(64, 8, kExperts / 64 + 1);
  const Placement start = must(plan_uniform(initial, t), "uniform");
  RebalanceOptions options;
  options.max_moves = 64;
  options.target_ratio = 1.0;  // never stop early: the worst case for the budget
  std::size_t moves = 0;
  const double ms = median_ms(repeats, [&] {
    moves = must(rebalance(start, drifted, t, options), "rebalance").moves.size();
  });
  boost::json::object out;
  out["shape"] = "58x256 on 64 devices, 64 moves, target ratio 1.0";
  out["total_ms"] = ms;
  out["per_layer_ms"] = ms / static_cast<double>(kLayers);
  out["moves"] = moves;
  return out;
}

boost::json::object quality_row(const Placement& placement, const LoadMatrix& loads,
                                const Topology& t) {
  EvalOptions even;
  even.policy = RoutingPolicy::kEvenSplit;
  const PlacementMetrics m = must(evaluate(placement, loads, t, even), "evaluate");
  const PlacementMetrics local = must(evaluate(placement, loads, t), "evaluate");
  return {{"mean_imbalance", m.mean_imbalance},
          {"sum_max_device_load", m.sum_max_device_load},
          {"locality_mean_imbalance", local.mean_imbalance},
          {"locality_sum_max_device_load", local.sum_max_device_load},
          {"cross_node_share", local.cross_node_share}};
}

// DeepSeek-V3 shape, 32 devices (4 nodes x 8), one redundant slot per device: 9 slots per
// device in every plan; layer-wise gets the same total (58 x 9 per device), spread unevenly.
boost::json::object quality(const LoadMatrix& loads) {
  const Topology t = topology(32, 4, kExperts / 32 + 1);
  const Placement eplb = must(eplb_plan(loads, t, kGroups), "eplb");
  // groups % nodes != 0 selects EPLB's global policy (replicate and pack over all devices).
  const Placement eplb_global = must(eplb_plan(loads, t, 1), "eplb global");
  const Placement uniform = must(plan_uniform(loads, t), "uniform");
  const LayerwisePlan layerwise = must(plan_layerwise(loads, t), "layerwise");
  boost::json::object out;
  out["shape"] = "58x256 on 32 devices (4 nodes), 9 slots per device per layer on average";
  out["eplb"] = quality_row(eplb, loads, t);
  out["eplb_global"] = quality_row(eplb_global, loads, t);
  out["uniform"] = quality_row(uniform, loads, t);
  out["layerwise"] = quality_row(layerwise.placement, loads, t);
  const auto [lo, hi] =
      std::minmax_element(layerwise.slots_per_device.begin(), layerwise.slots_per_device.end());
  out["layerwise_slots_min"] = *lo;
  out["layerwise_slots_max"] = *hi;
  const double e = out["eplb"].as_object()["sum_max_device_load"].as_double();
  const double g = out["eplb_global"].as_object()["sum_max_device_load"].as_double();
  const double u = out["uniform"].as_object()["sum_max_device_load"].as_double();
  const double l = out["layerwise"].as_object()["sum_max_device_load"].as_double();
  out["layerwise_vs_eplb_reduction"] = 1.0 - l / e;
  out["layerwise_vs_eplb_global_reduction"] = 1.0 - l / g;
  out["layerwise_vs_uniform_reduction"] = 1.0 - l / u;
  return out;
}

// Budgets uniform redundancy cannot use: memory of `budget` slots per device per layer on average
// (58 x budget slots per device in all). Uniform redundancy, and EPLB (num_replicas = 32 x
// slots), can only use floor(budget) slots per device in every layer; layer-wise gets the whole
// budget and gives its redundant slots-per-device to some layers only.
boost::json::array budget_sweep(const LoadMatrix& loads) {
  constexpr std::size_t kDevices = 32;
  constexpr std::size_t kNodes = 4;
  constexpr std::size_t kMinSlots = kExperts / kDevices;  // 8: no redundancy
  constexpr double kBudgets[] = {8.0, 8.25, 8.5, 8.75, 9.0, 10.0};
  std::map<std::size_t, boost::json::object> baselines;  // by floor(budget)
  boost::json::array rows;
  for (const double budget : kBudgets) {
    const auto slots = static_cast<std::size_t>(std::floor(budget));
    const auto total =
        static_cast<std::size_t>(std::llround(static_cast<double>(kLayers) * budget));
    const Topology t = topology(kDevices, kNodes, slots);
    if (baselines.find(slots) == baselines.end()) {
      boost::json::object b;
      b["uniform"] = quality_row(must(plan_uniform(loads, t), "uniform"), loads, t);
      b["eplb"] = quality_row(must(eplb_plan(loads, t, kGroups), "eplb"), loads, t);
      b["eplb_global"] = quality_row(must(eplb_plan(loads, t, 1), "eplb global"), loads, t);
      baselines[slots] = std::move(b);
    }
    LayerwiseOptions options;
    options.total_slots_per_device = total;
    const LayerwisePlan layerwise = must(plan_layerwise(loads, t, options), "layerwise");
    boost::json::object row = baselines[slots];
    row["budget_slots_per_device"] = budget;
    row["total_slots_per_device"] = total;
    row["baseline_slots_per_device"] = slots;
    row["layerwise"] = quality_row(layerwise.placement, loads, t);
    std::size_t redundant_layers = 0;
    std::size_t used = 0;
    for (const std::size_t s : layerwise.slots_per_device) {
      redundant_layers += s > kMinSlots ? 1 : 0;
      used += s;
    }
    const auto [lo, hi] =
        std::minmax_element(layerwise.slots_per_device.begin(), layerwise.slots_per_device.end());
    row["layerwise_layers_with_redundancy"] = redundant_layers;
    row["layerwise_slots_used"] = used;
    row["layerwise_unused_slots"] = layerwise.unused_slots;
    row["layerwise_slots_min"] = *lo;
    row["layerwise_slots_max"] = *hi;
    const double l = row["layerwise"].as_object()["sum_max_device_load"].as_double();
    for (const char* base : {"uniform", "eplb", "eplb_global"}) {
      const double b = row[base].as_object()["sum_max_device_load"].as_double();
      row[std::string("layerwise_vs_") + base + "_reduction"] = 1.0 - l / b;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// Layers of different skew: layer l draws its Zipf exponent evenly from [0.6, 1.4], so some
// layers need redundancy far more than others (the generator alone gives every layer the same
// rank profile).
LoadMatrix mixed_skew_loads(SyntheticOptions options, Random& random) {
  std::vector<double> values;
  const std::size_t layers = options.layers;
  options.layers = 1;
  for (std::size_t l = 0; l < layers; ++l) {
    options.zipf_s = 0.6 + 0.8 * static_cast<double>(l) / static_cast<double>(layers - 1);
    const LoadMatrix one = synthetic_loads(options, random);
    values.insert(values.end(), one.values().begin(), one.values().end());
  }
  return must(LoadMatrix::make(layers, options.experts, std::move(values)), "mixed loads");
}

}  // namespace
}  // namespace omni::placement

int main(int argc, char** argv) {
  using namespace omni::placement;
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const std::size_t repeats = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 5;
  omni::SeededRandom random(seed);
  SyntheticOptions options;
  options.layers = kLayers;
  options.experts = kExperts;
  if (argc > 3) options.zipf_s = std::strtod(argv[3], nullptr);
  const std::vector<LoadMatrix> windows = synthetic_windows(options, 2, random);
  boost::json::object report;
  report["seed"] = seed;
  report["repeats"] = repeats;
  report["synthetic"] = {{"zipf_s", options.zipf_s},
                         {"tokens_per_layer", options.tokens_per_layer},
                         {"layer_correlation", options.layer_correlation},
                         {"drift", options.drift}};
  report["planning"] = timing(windows[0], repeats == 0 ? 1 : repeats);
  report["rebalance"] = rebalance_timing(windows[0], windows[1], repeats == 0 ? 1 : repeats);
  report["quality"] = quality(windows[0]);
  const LoadMatrix mixed = mixed_skew_loads(options, random);
  report["quality_mixed_skew"] = quality(mixed);
  report["budget_sweep"] = budget_sweep(windows[0]);
  report["budget_sweep_mixed_skew"] = budget_sweep(mixed);
  std::cout << boost::json::serialize(report) << "\n";
  return 0;
}
