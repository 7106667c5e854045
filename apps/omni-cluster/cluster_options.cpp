#include "cluster_options.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <cmath>

#include "omni/cluster/traffic_class.hpp"
#include "omni/workload/synthetic.hpp"
#include "omni/workload/trace.hpp"

namespace omni::cluster::app {

void add_flags(CLI::App& cli, Options& o) {
  cli.add_option("--trace", o.trace, "Trace file to replay");
  cli.add_option("--trace-format", o.trace_format, "mooncake or azure")
      ->check(CLI::IsMember({"mooncake", "azure"}))
      ->capture_default_str();
  cli.add_option("--synthetic", o.synthetic,
                 "Synthetic workload SPEC instead of a trace (grammar: docs/omni-bench.md)");
  cli.add_option("--system-prompt-tokens", o.system_prompt_tokens,
                 "Azure: a shared system prompt of this many tokens before every prompt");
  cli.add_option("--prefill-instances", o.prefill_instances, "Prefill instances (0: aggregated)")
      ->capture_default_str();
  cli.add_option("--decode-instances", o.decode_instances,
                 "Decode instances (with 0 prefill instances, they serve whole requests)")
      ->capture_default_str();
  cli.add_option("--pd-groups", o.pd_groups,
                 "PD groups: a decode choice stays in the prefill instance's group")
      ->capture_default_str();
  cli.add_option("--pd-pattern", o.pd_pattern,
                 "sequential (vLLM NixlConnector) or concurrent (SGLang bootstrap)")
      ->check(CLI::IsMember({"sequential", "concurrent"}))
      ->capture_default_str();
  cli.add_option("--model", o.model, "Model profile name or YAML file")->capture_default_str();
  cli.add_option("--hardware", o.hardware, "Hardware profile name or YAML file")
      ->capture_default_str();
  cli.add_option("--tensor-parallel-size,--tp", o.tp, "Devices per instance in tensor parallel")
      ->capture_default_str();
  cli.add_option("--data-parallel-size,--dp", o.dp, "Data-parallel ranks per instance")
      ->capture_default_str();
  cli.add_option("--enable-expert-parallel", o.ep, "Experts sharded over all devices")
      ->capture_default_str();
  cli.add_option("--num-speculative-tokens", o.num_speculative_tokens, "MTP draft tokens per step")
      ->capture_default_str();
  cli.add_option("--mtp-acceptance", o.mtp_acceptance, "Acceptance rate of each draft token")
      ->capture_default_str();
  cli.add_option("--block-size", o.block_size, "KV block size in tokens (divides 512)")
      ->capture_default_str();
  cli.add_option("--max-num-seqs", o.max_num_seqs, "Sequences per batch")->capture_default_str();
  cli.add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "Tokens per step")
      ->capture_default_str();
  cli.add_option("--num-gpu-blocks-override", o.num_gpu_blocks,
                 "KV blocks per instance (default: from the profiles' memory)");
  cli.add_flag("--no-prefix-caching", o.no_prefix_caching, "Disable prefix caching");
  cli.add_option("--kv-link-gbps", o.kv_link_gbps,
                 "KV-transfer bandwidth of one transfer, in gigabits (not bytes) per second")
      ->capture_default_str();
  cli.add_option("--network-latency-ms", o.network_latency_ms, "One gateway-instance hop")
      ->capture_default_str();
  cli.add_option("--policy", o.policy, policy_help())->capture_default_str();
  cli.add_option("--node-speed", o.node_speed,
                 "How predictive policies (omni) estimate each prefill node's speed: learned (as "
                 "omni-proxy, the default) or equal")
      ->check(CLI::IsMember({"learned", "equal"}))
      ->capture_default_str();
  // The gateway core's own settings; the --limits-* and --timeouts-* ones carry omni-proxy's names
  // and defaults (docs/proxy.md), the rest are the simulator's own.
  cli.add_option("--limits-queue-capacity", o.gateway.queue_capacity,
                 "Requests waiting in the gateway (rejected beyond)")
      ->capture_default_str();
  cli.add_option("--limits-node-max-outstanding-tokens", o.gateway.node_limits.outstanding_tokens,
                 "A node at or over this many outstanding tokens takes no new request")
      ->capture_default_str();
  cli.add_option("--limits-node-max-running", o.gateway.node_limits.running,
                 "A node running this many requests takes no new one")
      ->capture_default_str();
  cli.add_option("--timeouts-queue", o.queue_timeout_s,
                 "Longest wait in the gateway queue, seconds (then the request fails)")
      ->capture_default_str();
  cli.add_option(
         "--max-decode-wait", o.max_decode_wait_s,
         "PD: longest a prefilled request waits for a decode node the policy holds, seconds")
      ->capture_default_str();
  cli.add_option("--prefix-index-predicted-ttl", o.predicted_ttl_s,
                 "Seconds a placement's predicted blocks live in the gateway's prefix index until "
                 "the engine's events confirm them (omni-proxy: prefix_index.predicted_ttl)")
      ->capture_default_str();
  cli.add_option("--kv-event-delay-ms", o.kv_event_delay_ms,
                 "Engines' KV events reach the gateway this long after their step")
      ->capture_default_str();
  cli.add_option("--engine-metrics-interval", o.engine_metrics_interval_s,
                 "The engines' own load reaches the gateway this often, seconds (as omni-proxy's "
                 "health.interval scrape); 0: after every step")
      ->capture_default_str();
  cli.add_flag("--fresh-cache-oracle", o.fresh_cache_oracle,
               "What-if only: the gateway sees every engine's exact cache instantly instead of "
               "their KV events");
  // Traffic classes (docs/omni-cluster.md): the gateway's bands, and the workload's class mix.
  cli.add_option(
      "--traffic-bands", o.traffic_bands,
      "The gateway's priority bands, most urgent first: "
      "name:max_priority[:sheddable][:weight=W][:timeout=S][:max-waiting=N][:share=F],... "
      "(default: one band)");
  cli.add_option("--band-order", o.band_order,
                 "Order of the bands in the gateway queue: strict or weighted (by band weight)")
      ->check(CLI::IsMember({"strict", "weighted"}))
      ->capture_default_str();
  cli.add_option("--band-aging-s", o.band_aging_s,
                 "A waiting request rises one band per this many seconds (0: never)")
      ->capture_default_str();
  cli.add_option("--traffic-classes", o.traffic_classes,
                 "The workload's classes, each a share of its requests: "
                 "name:share[:band=B][:tenant=T][:weight=W][:share=F],... (default: one class)");
  cli.add_option("--only-class", o.only_class,
                 "Replay only this class's requests (the same ones at the same times): the "
                 "class's baseline without the others");
  cli.add_option("--time-scale", o.time_scale,
                 "Multiply arrival times by this (0.5 = twice as fast), as omni-bench")
      ->capture_default_str();
  cli.add_option("--max-requests", o.max_requests, "Stop after this many requests (0: all)");
  cli.add_option("--slo", o.slo, "Goodput SLOs, e.g. ttft=2s,tpot=80ms");
  cli.add_option("--sample-interval", o.sample_interval_s,
                 "Virtual seconds between queue/KV samples in the report")
      ->capture_default_str();
  cli.add_option("--out", o.out, "Results JSON (omni-bench's schema)");
  cli.add_option("--requests-out", o.requests_out, "Per-request JSON lines");
  cli.add_option("--report", o.report_dir, "Write report.html and SVG charts into this folder");
  cli.add_option("--seed", o.seed, "Seed of every random choice")->capture_default_str();
  cli.add_flag("--no-fast-forward", o.no_fast_forward,
               "Step every instance through every step (slow; for checking)");
}

std::string policy_help() {
  std::string help =
      "Gateway policy, or several separated by commas (each is run on the same workload). "
      "Default " +
      std::string(sched::kDefaultPolicy) + ". Known:";
  for (const sched::PolicyInfo& p : sched::placement_policies())
    help += " " + p.name + " (" + p.summary + ");";
  return help;
}

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  for (const char c : text) {
    if (c == ',') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

engine::EngineConfig engine_config(const Options& o) {
  engine::EngineConfig config;
  config.block_size = o.block_size;
  config.num_gpu_blocks = o.num_gpu_blocks;
  config.max_num_seqs = o.max_num_seqs;
  config.max_num_batched_tokens = o.max_num_batched_tokens;
  config.enable_prefix_caching = !o.no_prefix_caching;
  return config;
}

}  // namespace

Result<Setup> prepare(const Options& o) {
  if (o.trace.empty() == o.synthetic.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "give exactly one of --trace or --synthetic");
  }
  if (o.decode_instances == 0) {
    return make_error(ErrorCode::kInvalidArgument, "--decode-instances must be at least 1");
  }
  if (o.time_scale <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "--time-scale must be positive");
  }
  if (!(o.band_aging_s >= 0) || !std::isfinite(o.band_aging_s)) {
    return make_error(ErrorCode::kInvalidArgument, "--band-aging-s must be seconds >= 0");
  }
  auto bands = parse_traffic_bands(o.traffic_bands);
  if (!bands) return std::move(bands).error();
  auto classes = parse_traffic_classes(o.traffic_classes, *bands);
  if (!classes) return std::move(classes).error();
  auto model = engine::load_model_profile(o.model);
  if (!model) return std::move(model).error();
  auto hardware = engine::load_hardware_profile(o.hardware);
  if (!hardware) return std::move(hardware).error();
  auto slo = o.slo.empty() ? Result<benchstat::Slo>(benchstat::Slo{}) : benchstat::parse_slo(o.slo);
  if (!slo) return std::move(slo).error();

  const engine::ParallelLayout layout{o.tp, o.dp, o.ep};
  const engine::MtpConfig mtp{o.num_speculative_tokens, o.mtp_acceptance};
  ClusterConfig config;
  config.prefill_instances = o.prefill_instances;
  config.decode_instances = o.decode_instances;
  config.pd_groups = std::max<std::uint32_t>(1, o.pd_groups);
  config.prefill_engine = engine_config(o);
  config.decode_engine = engine_config(o);
  config.pattern = o.pd_pattern == "concurrent" ? PdPattern::kConcurrent : PdPattern::kSequential;
  config.network_latency_s = o.network_latency_ms / 1e3;
  config.kv_link_gbps = o.kv_link_gbps;
  config.time_scale = o.time_scale;
  config.max_requests = o.max_requests;
  config.sample_interval_s = o.sample_interval_s;
  config.slo = Slo{slo->ttft_s.value_or(0.0), slo->tpot_s.value_or(0.0), slo->e2e_s.value_or(0.0)};
  config.seed = o.seed;
  config.fast_forward = !o.no_fast_forward;
  config.gateway = o.gateway;
  config.gateway.queue_timeout =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o.queue_timeout_s));
  config.gateway.max_decode_wait =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o.max_decode_wait_s));
  config.kv_event_delay_s = o.kv_event_delay_ms / 1e3;
  config.gateway.prefix.predicted_ttl =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o.predicted_ttl_s));
  config.engine_metrics_interval_s = o.engine_metrics_interval_s;
  config.fresh_cache_oracle = o.fresh_cache_oracle;
  config.gateway.traffic.bands = std::move(*bands);
  config.gateway.traffic.order =
      o.band_order == "weighted" ? proxy::BandOrder::kWeighted : proxy::BandOrder::kStrict;
  config.gateway.traffic.aging =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(o.band_aging_s));
  config.classes = std::move(*classes);

  std::vector<std::string> policies = split_commas(o.policy);
  if (policies.empty()) return make_error(ErrorCode::kInvalidArgument, "--policy is empty");
  for (const std::string& name : policies) {
    if (auto policy = sched::make_placement_policy(name, policy_settings(o)); !policy) {
      return std::move(policy).error();
    }
  }
  // Prefill instances run prompts only: no MTP there.
  engine::CostModel prefill_cost(*model, *hardware, layout, engine::MtpConfig{});
  engine::CostModel decode_cost(*model, *hardware, layout, mtp);
  if (o.num_gpu_blocks == 0 && decode_cost.kv_capacity_tokens() < o.block_size) {
    return make_error(ErrorCode::kInvalidArgument,
                      "model " + o.model + " leaves no memory for the KV cache on " +
                          std::to_string(layout.devices()) + " x " + o.hardware +
                          ": use more devices (--tensor-parallel-size, --data-parallel-size), "
                          "bigger --hardware, or --num-gpu-blocks-override");
  }
  std::optional<std::size_t> only_class;
  if (!o.only_class.empty()) {
    for (std::size_t i = 0; i < config.classes.size(); ++i) {
      if (config.classes[i].name == o.only_class) only_class = i;
    }
    if (!only_class) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--only-class: no class named '" + o.only_class + "' in --traffic-classes");
    }
  }
  return Setup{
      config,    std::move(prefill_cost), std::move(decode_cost), std::move(policies), *slo,
      only_class};
}

std::optional<ClusterRequest> WorkloadSource::next() {
  while (true) {
    auto request = next_any();
    if (!request || !only_ || class_of_request(classes_, seed_, request->id) == *only_) {
      return request;
    }
  }
}

std::optional<ClusterRequest> WorkloadSource::next_any() {
  auto next = workload_->next();
  if (!next) {
    error_ = std::move(next).error();
    return std::nullopt;
  }
  if (!*next) return std::nullopt;
  workload::RequestSpec& spec = **next;
  ClusterRequest request;
  request.id = spec.index;
  request.arrival_s = spec.arrival_s;
  request.prompt_tokens = spec.input_tokens;
  request.output_tokens = spec.max_output_tokens;
  request.hash_ids = std::move(spec.hash_ids);
  return request;
}

Result<std::unique_ptr<WorkloadSource>> open_source(const Options& o) {
  std::unique_ptr<workload::Workload> w;
  if (!o.synthetic.empty()) {
    auto spec = workload::parse_synthetic_spec(o.synthetic);
    if (!spec) return std::move(spec).error();
    w = workload::make_synthetic_workload(*spec, o.seed);
  } else {
    auto format = workload::parse_trace_format(o.trace_format);
    if (!format) return std::move(format).error();
    workload::TraceOptions trace_options;
    trace_options.system_prompt_tokens = o.system_prompt_tokens;
    auto opened = workload::open_trace_workload(o.trace, *format, trace_options);
    if (!opened) return std::move(opened).error();
    w = std::move(*opened);
  }
  return std::make_unique<WorkloadSource>(std::move(w));
}

namespace {

benchstat::Stat stat_of(const LogHistogram& h) {
  benchstat::Stat s;
  s.count = static_cast<std::size_t>(h.count());
  // The histograms hold milliseconds; the summary holds seconds.
  s.mean = h.mean() / 1e3;
  s.p50 = h.quantile(0.50) / 1e3;
  s.p90 = h.quantile(0.90) / 1e3;
  s.p99 = h.quantile(0.99) / 1e3;
  s.min = h.min() / 1e3;
  s.max = h.max() / 1e3;
  return s;
}

}  // namespace

benchstat::Summary to_summary(const ClusterResult& r, const benchstat::Slo& slo) {
  benchstat::Summary s;
  s.completed = r.completed;
  s.failed = r.failed;
  s.duration_s = r.duration_s;
  s.total_input_tokens = r.prompt_tokens;
  s.total_output_tokens = r.output_tokens;
  s.request_throughput = r.request_throughput();
  s.output_token_throughput = r.output_token_throughput();
  s.total_token_throughput =
      r.duration_s > 0 ? static_cast<double>(r.prompt_tokens + r.output_tokens) / r.duration_s : 0;
  if (!slo.empty()) {
    s.goodput = r.goodput();
    s.goodput_offered = r.goodput_offered();
  }
  s.prefix_cache_hit_rate = r.prefix_cache_hit_rate();
  s.ttft = stat_of(r.ttft_ms);
  s.tpot = stat_of(r.tpot_ms);
  s.itl = stat_of(r.itl_ms);
  s.e2e = stat_of(r.e2e_ms);
  for (const auto& [kind, count] : r.failed_by_kind) s.errors_by_kind[kind] = count;
  s.slo = slo;
  return s;
}

std::string record_line(const std::string& policy, const RequestRecord& r,
                        const std::vector<TrafficClass>& classes) {
  boost::json::object o;
  o["policy"] = policy;
  o["index"] = r.id;
  if (r.traffic_class >= 0 && static_cast<std::size_t>(r.traffic_class) < classes.size()) {
    o["class"] = classes[static_cast<std::size_t>(r.traffic_class)].name;
  }
  o["arrival_s"] = r.arrival_s;
  o["ok"] = r.ok;
  if (r.ok) {
    o["ttft_s"] = r.ttft_s;
    o["tpot_s"] = r.tpot_s;
    o["e2e_s"] = r.e2e_s;
    o["output_tokens"] = r.output_tokens;
    o["cached_tokens"] = r.cached_tokens;
  } else {
    o["error"] = r.error;
  }
  o["input_tokens"] = r.prompt_tokens;
  o["prefill_instance"] = r.prefill_instance;
  o["decode_instance"] = r.decode_instance;
  return boost::json::serialize(o);
}

namespace {

boost::json::object count_object(const std::map<std::string, std::uint64_t>& counts) {
  boost::json::object o;
  for (const auto& [key, count] : counts) o[key] = count;
  return o;
}

boost::json::object p50_p99(const LogHistogram& h) {
  boost::json::object o;
  o["p50"] = h.quantile(0.50);
  o["p99"] = h.quantile(0.99);
  return o;
}

}  // namespace

std::string results_json(const ClusterResult& r, const benchstat::Summary& summary,
                         const std::string& config) {
  std::string json = benchstat::to_json(summary, config);
  boost::json::array classes;
  for (const ClassResult& c : r.classes) {
    boost::json::object o;
    o["name"] = c.name;
    o["band"] = c.band;
    o["tenant"] = c.tenant;
    o["requests"] = c.requests;
    o["completed"] = c.completed;
    o["failed"] = c.failed;
    o["errors_by_kind"] = count_object(c.failed_by_kind);
    o["shed_by_reason"] = count_object(c.shed_by_reason);
    o["ttft_ms"] = p50_p99(c.ttft_ms);
    o["e2e_ms"] = p50_p99(c.e2e_ms);
    if (!summary.slo.empty()) {
      o["good"] = c.good;
      o["goodput_offered"] = c.goodput_offered(r);
    }
    o["legs_delayed"] = c.legs_delayed;
    boost::json::object waits;
    for (std::size_t cause = 0; cause < proxy::kWaitCauses; ++cause) {
      waits[proxy::wait_cause_name(static_cast<proxy::WaitCause>(cause))] = c.queue_wait_s[cause];
    }
    o["queue_wait_s"] = std::move(waits);
    classes.push_back(std::move(o));
  }
  // The schema's object, with the traffic figures added before its closing brace.
  json.pop_back();
  json += ",\"shed_by_reason\":" + boost::json::serialize(count_object(r.shed_by_reason));
  if (!classes.empty()) json += ",\"classes\":" + boost::json::serialize(classes);
  return json + "}";
}

std::string simulator_line(const ClusterResult& r, double wall) {
  const double requests = static_cast<double>(r.completed + r.failed);
  return fmt::format(
      "simulated {:.0f} requests in {:.2f} s of wall time ({:.0f} requests/s); {} events, {} "
      "steps + {} stable runs covering {} steps, {} preemptions",
      requests, wall, wall > 0 ? requests / wall : 0.0, r.events, r.engine_steps, r.stable_runs,
      r.stable_steps, r.preemptions);
}

std::string config_json(const Options& o, const ClusterResult& r, double wall) {
  boost::json::object c;
  c["tool"] = "omni-cluster";
  c["policy"] = r.policy;
  c["workload"] = o.synthetic.empty() ? o.trace_format + ":" + o.trace : "synthetic:" + o.synthetic;
  c["prefill_instances"] = o.prefill_instances;
  c["decode_instances"] = o.decode_instances;
  c["pd_pattern"] = o.pd_pattern;
  c["model"] = o.model;
  c["hardware"] = o.hardware;
  c["tensor_parallel_size"] = o.tp;
  c["data_parallel_size"] = o.dp;
  c["enable_expert_parallel"] = o.ep;
  c["time_scale"] = o.time_scale;
  c["seed"] = o.seed;
  c["wall_seconds"] = wall;
  return boost::json::serialize(c);
}

std::string describe(const Options& o) {
  return fmt::format(
      "{} prefill + {} decode instances ({} PD, {} groups), model {}, hardware {}, TP{} DP{}{}, "
      "block size {}, max {} seqs / {} batched tokens, KV link {} Gb/s, network {} ms, "
      "time scale {}, seed {}",
      o.prefill_instances, o.decode_instances, o.pd_pattern, o.pd_groups, o.model, o.hardware, o.tp,
      o.dp, o.ep ? " EP" : "", o.block_size, o.max_num_seqs, o.max_num_batched_tokens,
      o.kv_link_gbps, o.network_latency_ms, o.time_scale, o.seed);
}

}  // namespace omni::cluster::app
