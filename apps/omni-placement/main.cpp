// omni-placement: MoE expert placement from the command line.
//
//   omni-placement plan --algorithm eplb --loads loads.json --replicas 16 --groups 4
//       --nodes 2 --devices 8 --format json
//   omni-placement evaluate --placement plan.json --loads loads.csv
//   omni-placement rebalance --placement plan.json --loads w1.npy --loads w2.npy --move-budget 8
//   omni-placement simulate --windows 16 --seed 7 --layers 58 --experts 256 --devices 32
//
// Exit status: 0 success, 2 bad flags or input (the message names the problem).
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "omni/config/cli.hpp"

namespace omni::placement::cli {
namespace {

struct Flags {
  PlanFlags plan;
  EvaluateFlags evaluate;
  RebalanceFlags rebalance;
  SimulateFlags simulate;
  std::string plan_format = "text", evaluate_format = "text", rebalance_format = "text",
              simulate_format = "text";
};

OutputFormat to_format(const std::string& name) {
  return name == "json" ? OutputFormat::kJson : OutputFormat::kText;
}

void add_format(CLI::App& app, std::string& format) {
  app.add_option("--format", format, "Output: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void add_plan(CLI::App& app, Flags& f) {
  PlanFlags& p = f.plan;
  auto* cmd = app.add_subcommand("plan", "Plan a static placement from one window of loads");
  cmd->add_option("--algorithm", p.algorithm, "eplb, layerwise or uniform")
      ->check(CLI::IsMember({"eplb", "layerwise", "uniform"}))
      ->capture_default_str();
  cmd->add_option("--loads", p.loads, "Loads: .json, .csv or .npy, [layers][experts]")->required();
  cmd->add_option("--devices", p.topology.devices, "Devices (GPUs/NPUs) in total")->required();
  cmd->add_option("--nodes", p.topology.nodes, "Hosts")->capture_default_str();
  cmd->add_option("--replicas", p.topology.replicas,
                  "Physical expert slots per layer (a multiple of --devices)");
  cmd->add_option("--slots-per-device", p.topology.slots_per_device,
                  "Expert slots per device per layer (default: ceil(experts / devices))");
  cmd->add_option("--groups", p.groups,
                  "EPLB expert groups (hierarchical when groups % nodes == 0)")
      ->capture_default_str();
  cmd->add_option(
      "--slot-budget", p.slot_budget,
      "layerwise: slots per device summed over all layers (default: layers x slots-per-device)");
  cmd->add_option("--pattern-out", p.pattern_out, "Also write omni-infer's pattern .npy here");
  cmd->add_option("--pattern-dtype", p.pattern_dtype, "int32 or bool")
      ->check(CLI::IsMember({"int32", "bool"}))
      ->capture_default_str();
  cmd->add_option("--routing", p.routing, "Metrics' routing: locality or even")
      ->check(CLI::IsMember({"locality", "even"}))
      ->capture_default_str();
  add_format(*cmd, f.plan_format);
}

void add_evaluate(CLI::App& app, Flags& f) {
  EvaluateFlags& e = f.evaluate;
  auto* cmd = app.add_subcommand("evaluate", "Balance metrics of a placement under loads");
  cmd->add_option("--placement", e.placement,
                  "Plan .json (from plan --format json) or pattern .npy")
      ->required();
  cmd->add_option("--loads", e.loads, "Loads: .json, .csv or .npy")->required();
  cmd->add_option("--nodes", e.nodes, "Hosts")->capture_default_str();
  cmd->add_option("--routing", e.routing, "locality or even")
      ->check(CLI::IsMember({"locality", "even"}))
      ->capture_default_str();
  add_format(*cmd, f.evaluate_format);
}

void add_rebalance(CLI::App& app, Flags& f) {
  RebalanceFlags& r = f.rebalance;
  auto* cmd =
      app.add_subcommand("rebalance", "A short list of moves towards balance under fresh loads");
  cmd->add_option("--placement", r.placement, "Plan .json or pattern .npy")->required();
  cmd->add_option("--loads", r.loads, "Load windows, oldest first (repeat the flag); EMA-smoothed")
      ->required();
  cmd->add_option("--ema-alpha", r.ema_alpha, "Weight of the newest window")->capture_default_str();
  cmd->add_option("--nodes", r.nodes, "Hosts")->capture_default_str();
  cmd->add_option("--move-budget", r.move_budget, "Most moves over all layers")
      ->capture_default_str();
  cmd->add_option("--target-ratio", r.target_ratio,
                  "Stop when every layer's max/mean is at or below")
      ->capture_default_str();
  cmd->add_option("--pattern-out", r.pattern_out, "Write the resulting pattern .npy here");
  add_format(*cmd, f.rebalance_format);
}

void add_simulate(CLI::App& app, Flags& f) {
  SimulateFlags& s = f.simulate;
  auto* cmd = app.add_subcommand("simulate", "Replay synthetic drifting load windows");
  cmd->add_option("--windows", s.windows, "Load windows")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Random seed")->capture_default_str();
  cmd->add_option("--layers", s.layers, "MoE layers")->capture_default_str();
  cmd->add_option("--experts", s.experts, "Experts per layer")->capture_default_str();
  cmd->add_option("--devices", s.devices, "Devices")->capture_default_str();
  cmd->add_option("--nodes", s.nodes, "Hosts")->capture_default_str();
  cmd->add_option("--slots-per-device", s.slots_per_device,
                  "Slots per device per layer (default: ceil(experts / devices) + 1)");
  cmd->add_option("--groups", s.groups, "EPLB expert groups")->capture_default_str();
  cmd->add_option("--zipf", s.zipf, "Skew exponent (0 = uniform)")->capture_default_str();
  cmd->add_option("--drift", s.drift, "Heat drift per window, in [0, 1]")->capture_default_str();
  cmd->add_option("--replan-period", s.replan_period, "periodic-eplb: windows between re-plans")
      ->capture_default_str();
  cmd->add_option("--ema-alpha", s.ema_alpha, "EMA weight of the newest window")
      ->capture_default_str();
  cmd->add_option("--move-budget", s.move_budget, "dynamic: moves per window")
      ->capture_default_str();
  cmd->add_option("--target-ratio", s.target_ratio, "dynamic: target max/mean")
      ->capture_default_str();
  cmd->add_option("--algorithms", s.algorithms,
                  "static-eplb, static-layerwise, periodic-eplb, dynamic (default: all)")
      ->delimiter(',');
  cmd->add_option("--routing", s.routing, "Metrics' routing: locality or even")
      ->check(CLI::IsMember({"locality", "even"}))
      ->capture_default_str();
  add_format(*cmd, f.simulate_format);
}

int dispatch(const CLI::App& app, Flags& f) {
  if (app.got_subcommand("plan")) {
    f.plan.format = to_format(f.plan_format);
    return run_plan(f.plan, std::cout, std::cerr);
  }
  if (app.got_subcommand("evaluate")) {
    f.evaluate.format = to_format(f.evaluate_format);
    return run_evaluate(f.evaluate, std::cout, std::cerr);
  }
  if (app.got_subcommand("rebalance")) {
    f.rebalance.format = to_format(f.rebalance_format);
    return run_rebalance(f.rebalance, std::cout, std::cerr);
  }
  f.simulate.format = to_format(f.simulate_format);
  return run_simulate(f.simulate, std::cout, std::cerr);
}

}  // namespace
}  // namespace omni::placement::cli

int main(int argc, char** argv) {
  using namespace omni::placement::cli;
  CLI::App app("omni-placement: MoE expert placement (EPLB, layer-wise redundancy, rebalancing)");
  app.require_subcommand(1);
  Flags flags;
  add_plan(app, flags);
  add_evaluate(app, flags);
  add_rebalance(app, flags);
  add_simulate(app, flags);
  if (auto status = omni::config::parse_or_exit(app, argc, argv)) return *status;
  return dispatch(app, flags);
}
