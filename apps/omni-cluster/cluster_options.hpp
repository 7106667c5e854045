// omni-cluster's flags and the glue from them to the simulator: profiles, engine configs, the
// workload as a request source, and results in omni-bench's schema.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "omni/benchstat/summary.hpp"
#include "omni/cluster/simulator.hpp"
#include "omni/common/result.hpp"
#include "omni/engine/cost_model.hpp"
#include "omni/proxy/scheduler.hpp"
#include "omni/sched/policy.hpp"
#include "omni/workload/request_spec.hpp"

namespace omni::cluster::app {

struct Options {
  std::string trace;
  std::string trace_format = "mooncake";
  std::string synthetic;
  std::uint32_t system_prompt_tokens = 0;
  std::uint32_t prefill_instances = 1;
  std::uint32_t decode_instances = 1;
  std::uint32_t pd_groups = 1;
  std::string pd_pattern = "sequential";
  std::string model = "deepseek-v3";
  std::string hardware = "h200";
  std::uint32_t tp = 8, dp = 1;
  bool ep = true;
  std::uint32_t num_speculative_tokens = 0;
  double mtp_acceptance = 0.85;
  std::uint32_t block_size = 64;
  std::uint32_t max_num_seqs = 256;
  std::uint32_t max_num_batched_tokens = 16384;
  std::uint64_t num_gpu_blocks = 0;
  bool no_prefix_caching = false;
  double kv_link_gbps = engine::kDefaultKvLinkGbps;
  double network_latency_ms = 0.2;
  std::string policy = std::string(sched::kDefaultPolicy);
  std::string node_speed = "learned";
  proxy::SchedulerOptions gateway;  // the core's defaults: omni-proxy's
  double queue_timeout_s = 30.0;
  double max_decode_wait_s = 2.0;
  double kv_event_delay_ms = 1.0;
  double predicted_ttl_s = 2.0;
  double engine_metrics_interval_s = 1.0;
  bool fresh_cache_oracle = false;
  std::string traffic_bands;
  std::string band_order = "strict";
  double band_aging_s = 10.0;
  std::string traffic_classes;
  std::string only_class;
  double time_scale = 1.0;
  std::uint64_t max_requests = 0;
  std::string slo;
  double sample_interval_s = 1.0;
  std::string out;
  std::string requests_out;
  std::string report_dir;
  std::uint64_t seed = 0;
  bool no_fast_forward = false;
};

void add_flags(CLI::App& cli, Options& options);
std::string policy_help();

inline sched::PolicySettings policy_settings(const Options& o) {
  sched::PolicySettings settings;
  settings.seed = o.seed;
  settings.node_speed =
      o.node_speed == "equal" ? sched::NodeSpeed::kEqual : sched::NodeSpeed::kLearned;
  return settings;
}

struct Setup {
  ClusterConfig config;
  engine::CostModel prefill_cost;
  engine::CostModel decode_cost;
  std::vector<std::string> policies;
  benchstat::Slo slo;
  std::optional<std::size_t> only_class;  // --only-class: index into config.classes
};
Result<Setup> prepare(const Options& options);

// The workload as the simulator's request source. Its error (a malformed trace line) is
// reported by error() once the stream has ended.
class WorkloadSource final : public RequestSource {
 public:
  explicit WorkloadSource(std::unique_ptr<workload::Workload> workload)
      : workload_(std::move(workload)) {}
  std::optional<ClusterRequest> next() override;
  const std::optional<Error>& error() const { return error_; }
  // Passes on only the requests of class `only` (as the simulator will draw their classes), so
  // that a class can be replayed alone: the same requests at the same times, without the others.
  void keep_only(std::vector<TrafficClass> classes, std::uint64_t seed, std::size_t only) {
    classes_ = std::move(classes);
    seed_ = seed;
    only_ = only;
  }

 private:
  std::optional<ClusterRequest> next_any();
  std::unique_ptr<workload::Workload> workload_;
  std::vector<TrafficClass> classes_;
  std::uint64_t seed_ = 0;
  std::optional<std::size_t> only_;
  std::optional<Error> error_;
};
Result<std::unique_ptr<WorkloadSource>> open_source(const Options& options);

benchstat::Summary to_summary(const ClusterResult& result, const benchstat::Slo& slo);
std::string record_line(const std::string& policy, const RequestRecord& record,
                        const std::vector<TrafficClass>& classes = {});
// The results JSON of one policy: omni-bench's schema, plus "shed_by_reason" and, with traffic
// classes, "classes" (per class: counts, errors, sheds, TTFT/E2E p50/p99, goodput, queue waits).
std::string results_json(const ClusterResult& result, const benchstat::Summary& summary,
                         const std::string& config);
std::string simulator_line(const ClusterResult& result, double wall_seconds);
std::string config_json(const Options& options, const ClusterResult& result, double wall_seconds);
std::string describe(const Options& options);

}  // namespace omni::cluster::app
