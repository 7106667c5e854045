// omni-cluster's core: many engine-model instances in one virtual-time event loop behind the
// one gateway core (omni::proxy::Scheduler — the object omni-proxy runs), with PD disaggregation
// and modelled KV transfers. Pure and deterministic: one seed, one result, bit for bit; events
// are ordered by (time, kind, sequence).
//
//   arrivals ──submit──▶ gateway core (ManualClock) ──decisions──▶ instances (engine models)
//      ▲                  ▲ release / first_token        │ steps, stable runs
//      │                  ├ KV events (the engines' own, after kv_event_delay_s)
//      │                  └ engine load, every engine_metrics_interval_s (as a live scrape)
//      └──── the simulator adds only what a gateway does not decide: engines, transfers
//            (TransferModel), network latency, accounting
//
// Instances advance step by step while their batch changes; when an instance's batch is stable
// (decodes only, nothing admissible waiting, nobody finishing soon) it advances over many steps
// in one event, and an arrival in the middle cuts that run at the step in progress (requests join
// a batch at the next step boundary, as in vLLM).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "omni/cluster/histogram.hpp"
#include "omni/cluster/request.hpp"
#include "omni/cluster/traffic_class.hpp"
#include "omni/common/result.hpp"
#include "omni/engine/cost_model.hpp"
#include "omni/engine/engine.hpp"
#include "omni/proxy/scheduler.hpp"
#include "omni/sched/policy.hpp"

namespace omni::cluster {

// How prefill and decode legs are coordinated (vllm_wire_protocol.md): NIXL-style sequential
// (the gateway picks the decode node after the prefill answered) or SGLang-style concurrent
// (both picked at arrival; the decode side waits for the KV).
enum class PdPattern : std::uint8_t { kSequential, kConcurrent };

struct Slo {
  double ttft_s = 0.0;  // 0: no bound
  double tpot_s = 0.0;
  double e2e_s = 0.0;
};

struct ClusterConfig {
  std::uint32_t prefill_instances = 1;  // 0: aggregated (decode instances serve whole requests)
  std::uint32_t decode_instances = 1;
  std::uint32_t pd_groups = 1;  // instances are split into this many PD groups
  engine::EngineConfig prefill_engine;
  engine::EngineConfig decode_engine;
  PdPattern pattern = PdPattern::kSequential;
  double network_latency_s = 0.0002;  // one hop, gateway <-> instance
  // One KV transfer's bandwidth, in gigabits per second (CostModel::kv_transfer_seconds).
  double kv_link_gbps = engine::kDefaultKvLinkGbps;
  double time_scale = 1.0;         // arrival times are multiplied by this (0.5 = twice the rate)
  std::uint64_t max_requests = 0;  // 0: the whole source
  std::uint32_t timeline_instances = 4;  // instances per pool whose queue/KV are sampled
  double sample_interval_s = 1.0;
  Slo slo;
  std::uint64_t seed = 0;
  // Advance stable batches over many steps per event. Off: one event per step (the slow,
  // obviously-right path the fast one is tested against).
  bool fast_forward = true;
  // The gateway core's options, as omni-proxy sets them from its configuration (queue,
  // thresholds, timeouts, decode holding, prefix index). The simulator sets `aggregated`,
  // `block_size`, `transfer` and `fresh_cache` itself.
  proxy::SchedulerOptions gateway;
  // How the gateway learns what the engines cache: their KV events, delivered this long after
  // the step that produced them (0: at once) — what omni-proxy sees. Or, for what-if studies
  // only, a perfectly fresh feed of the engines' exact caches.
  double kv_event_delay_s = 0.001;
  bool fresh_cache_oracle = false;
  // The engines' own load (running, waiting, KV usage) reaches the gateway this often, as
  // omni-proxy's health checker scrapes /metrics (health.interval). 0: after every step.
  double engine_metrics_interval_s = 1.0;
  // Traffic classes (traffic_class.hpp): each request belongs to one, drawn from (seed, id) by
  // share, and its tickets carry the class's band, tenant and tenant weight; the bands are
  // gateway.traffic's. Empty: one class, no per-class figures.
  std::vector<TrafficClass> classes;
};

// One finished (or failed) request, for per-request JSON lines.
struct RequestRecord {
  std::uint64_t id = 0;
  double arrival_s = 0.0;
  double ttft_s = 0.0;
  double e2e_s = 0.0;
  double tpot_s = 0.0;  // 0 with one output token
  std::uint32_t prompt_tokens = 0;
  std::uint32_t output_tokens = 0;
  std::uint32_t cached_tokens = 0;
  std::int32_t prefill_instance = -1;
  std::int32_t decode_instance = -1;
  bool ok = true;
  std::string error;
  std::int32_t traffic_class = -1;  // index into ClusterConfig::classes; -1: none
};

struct ClusterResult;

// The figures of one traffic class.
struct ClassResult {
  std::string name;
  std::string band;            // its band's name ("default" without bands)
  std::uint32_t tenant = 0;    // 0: none
  std::uint64_t requests = 0;  // arrived
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::map<std::string, std::uint64_t> failed_by_kind;  // as ClusterResult's
  std::map<std::string, std::uint64_t> shed_by_reason;  // evicted, band_full, band_timeout
  std::uint64_t good = 0;                               // completed within the SLOs
  LogHistogram ttft_ms, e2e_ms;
  // Gateway legs (a PD request has two) that waited in the gateway's queue at all, and the
  // seconds all its legs waited there, per cause (proxy::WaitCause's order).
  std::uint64_t legs_delayed = 0;
  std::array<double, proxy::kWaitCauses> queue_wait_s{};
  // Its requests finished within the SLOs per second of the run's arrival span (as
  // ClusterResult::goodput_offered).
  double goodput_offered(const ClusterResult& run) const;
};

struct TimelinePoint {
  double t = 0.0;
  // Per sampled instance (prefill ones first, then decode), and pool-wide means.
  std::vector<std::uint32_t> waiting;
  std::vector<std::uint32_t> running;
  std::vector<double> kv_usage;
  double mean_waiting_prefill = 0.0, mean_waiting_decode = 0.0;
  double mean_kv_usage_decode = 0.0;
};

struct ClusterResult {
  std::string policy;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  // rejected (the gateway's queue was full, or the engine refused), timed_out (no node within the
  // gateway's queue timeout), shed (a sheddable band gave it up), unavailable, never_finished,
  // aborted
  std::map<std::string, std::uint64_t> failed_by_kind;
  std::map<std::string, std::uint64_t> shed_by_reason;  // proxy::shed_reason_name's names
  std::uint64_t good = 0;                               // completed within the SLOs
  double duration_s = 0.0;      // first arrival to last completion, virtual seconds
  double arrival_span_s = 0.0;  // first arrival to last arrival
  std::uint64_t prompt_tokens = 0;
  std::uint64_t output_tokens = 0;
  std::uint64_t cached_tokens = 0;  // prompt tokens served from prefix caches
  LogHistogram ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::vector<std::string> timeline_labels;  // names of the sampled instances
  std::vector<TimelinePoint> timeline;
  std::uint64_t events = 0;        // processed by the loop
  std::uint64_t engine_steps = 0;  // regular steps
  std::uint64_t stable_runs = 0;   // multi-step advances
  std::uint64_t stable_steps = 0;  // steps covered by them
  std::uint64_t preemptions = 0;
  std::uint64_t decode_holds = 0;          // prefilled requests the policy held for a decode node
  std::uint64_t decode_hold_timeouts = 0;  // of those, placed by the bound (time or capacity)
  std::vector<ClassResult> classes;        // one per ClusterConfig::classes entry, in its order
  double request_throughput() const;
  double output_token_throughput() const;
  // Requests finished within the SLOs per second of the run (duration_s), as `vllm bench serve`
  // and omni-bench count it: the shared results schema's `goodput`.
  double goodput() const;
  // The same per second of the arrival span (first to last arrival): the trace offers its
  // requests over that span, so when every policy serves every request within the SLOs they
  // tie, instead of differing by how long the last arrivals happen to decode (the makespan's
  // tail). The policy comparison ranks by this. Falls back to duration_s when all requests
  // arrive at one instant.
  double goodput_offered() const;
  double prefix_cache_hit_rate() const;
};

using RecordSink = std::function<void(const RequestRecord&)>;

// One decision of the gateway core, as it was made: for the differential test against the core
// stepped by hand.
struct GatewayDecision {
  double t = 0.0;
  std::uint64_t request = 0;
  sched::Role role = sched::Role::kPrefill;
  std::int32_t node = -1;  // the core's node id; -1: refused (timed out, unavailable)
};
using DecisionSink = std::function<void(const GatewayDecision&)>;

// Every call the simulator makes into the gateway core, in order, with the virtual time it was
// made at: replayed on a fresh core (the differential test), it must give the very decisions the
// simulation got, which shows the simulator adds no decision of its own.
struct GatewayInput {
  enum class Kind : std::uint8_t {
    kSetNodes,
    kSubmit,
    kSchedule,
    kRelease,
    kFirstToken,
    kKvEvents,
    kEngineLoad
  };
  Kind kind = Kind::kSchedule;
  double t = 0.0;
  std::vector<proxy::NodeSpec> nodes;  // kSetNodes
  proxy::Ticket ticket;                // kSubmit
  proxy::Lease lease;                  // kRelease, kFirstToken
  proxy::Outcome outcome = proxy::Outcome::kSuccess;
  std::uint32_t node = 0;                  // kKvEvents, kEngineLoad
  kvcache::KVEventBatch batch;             // kKvEvents
  proxy::EngineLoad load;                  // kEngineLoad
  std::vector<proxy::Decision> decisions;  // kSchedule: what the core decided
};
using GatewayInputSink = std::function<void(const GatewayInput&)>;

// Runs the whole source through the cluster. The cost model and engine configs are copied into
// every instance; `policy` is the gateway core's (make it with sched::make_placement_policy).
Result<ClusterResult> simulate(const ClusterConfig& config, const engine::CostModel& prefill_cost,
                               const engine::CostModel& decode_cost, RequestSource& source,
                               std::unique_ptr<sched::PlacementPolicy> policy,
                               const RecordSink& sink = {}, const DecisionSink& decisions = {},
                               const GatewayInputSink& inputs = {});

}  // namespace omni::cluster
