// The four subcommands of omni-placement, each a plain function of its options.
//
// Every command returns an exit status: 0 on success, 2 when the input or the flags are wrong
// (the message, on stderr, names the problem). Results go to `out`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace omni::placement::cli {

enum class OutputFormat { kText, kJson };

struct TopologyFlags {
  std::size_t devices = 0;  // 0: from the placement (evaluate, rebalance)
  std::size_t nodes = 1;
  std::size_t replicas = 0;          // physical slots per layer; 0: from slots_per_device
  std::size_t slots_per_device = 0;  // 0: from replicas, else ceil(experts / devices)
};

struct PlanFlags {
  std::string algorithm = "eplb";  // eplb | layerwise | uniform
  std::string loads;
  TopologyFlags topology;
  std::size_t groups = 1;
  std::size_t slot_budget = 0;  // layerwise: slots per device summed over layers; 0 = uniform's
  std::string pattern_out;
  std::string pattern_dtype = "int32";  // int32 | bool
  std::string routing = "locality";     // locality | even
  OutputFormat format = OutputFormat::kText;
};

struct EvaluateFlags {
  std::string placement;  // plan JSON, or a pattern .npy
  std::string loads;
  std::size_t nodes = 1;
  std::string routing = "locality";
  OutputFormat format = OutputFormat::kText;
};

struct RebalanceFlags {
  std::string placement;
  std::vector<std::string> loads;  // windows, oldest first, smoothed with an EMA
  double ema_alpha = 0.5;
  std::size_t nodes = 1;
  std::size_t move_budget = 32;
  double target_ratio = 1.05;
  std::string pattern_out;
  OutputFormat format = OutputFormat::kText;
};

struct SimulateFlags {
  std::size_t windows = 16;
  std::uint64_t seed = 1;
  std::size_t layers = 58;
  std::size_t experts = 256;
  std::size_t devices = 32;
  std::size_t nodes = 4;
  std::size_t slots_per_device = 0;  // 0: ceil(experts / devices) + 1
  std::size_t groups = 1;
  double zipf = 1.0;
  double drift = 0.1;
  std::size_t replan_period = 4;
  double ema_alpha = 0.5;
  std::size_t move_budget = 32;
  double target_ratio = 1.05;
  std::vector<std::string> algorithms;  // empty: all
  std::string routing = "locality";
  OutputFormat format = OutputFormat::kText;
};

int run_plan(const PlanFlags& flags, std::ostream& out, std::ostream& err);
int run_evaluate(const EvaluateFlags& flags, std::ostream& out, std::ostream& err);
int run_rebalance(const RebalanceFlags& flags, std::ostream& out, std::ostream& err);
int run_simulate(const SimulateFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace omni::placement::cli
