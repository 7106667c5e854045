#include "omni/cluster/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <unordered_map>
#include <utility>

#include "omni/common/clock.hpp"

namespace omni::cluster {
namespace {

using engine::Engine;
using engine::FinishReason;
using engine::SeqId;
using engine::SeqSpec;
using proxy::Decision;
using proxy::Lease;
using proxy::Outcome;
using proxy::Ticket;
using sched::Role;

// Equal times are ordered by kind, then by insertion: engine progress first, then gateway
// inputs, then new arrivals, then observation.
enum class EventKind : std::uint8_t {
  kStepDone,
  kRunDone,
  kPrefillReturned,
  kTransferDone,
  kKvEvents,
  kScrape,
  kGatewayWake,
  kDeliver,
  kArrival,
  kSample,
};

struct Event {
  double t = 0.0;
  EventKind kind = EventKind::kArrival;
  std::uint64_t seq = 0;
  std::uint64_t subject = 0;  // instance slot, or request id
  std::uint64_t version = 0;  // an instance's version (stale run ends are ignored)
};

struct LaterFirst {
  bool operator()(const Event& x, const Event& y) const {
    if (x.t != y.t) return x.t > y.t;
    if (x.kind != y.kind) return x.kind > y.kind;
    return x.seq > y.seq;
  }
};

enum class Phase : std::uint8_t { kIdle, kStep, kRun };

// One engine instance. Its slot in instances_ is also its node id in the gateway core: the
// prefill pool first, then the decode pool.
struct Instance {
  explicit Instance(Engine e) : engine(std::move(e)) {}
  Engine engine;
  Role role = Role::kPrefill;
  Phase phase = Phase::kIdle;
  engine::StepPlan plan;
  double started = 0.0;  // start of the step or run in flight
  std::uint32_t run_steps = 0;
  bool run_cut = false;
  std::uint64_t version = 0;
  std::vector<SeqSpec> pending_adds;  // applied at the next step boundary
  std::vector<SeqId> pending_releases;
  std::deque<std::pair<double, kvcache::KVEventBatch>> kv_in_flight;  // to the gateway
  // Sampled for the report.
  std::uint32_t running = 0, waiting = 0;
  double kv_usage = 0.0;
};

struct Flight {
  double arrival = 0.0;
  std::uint32_t prompt = 0;
  std::uint32_t output = 0;
  std::vector<std::uint64_t> hashes;
  std::int32_t prefill = -1;  // instance slots
  std::int32_t decode = -1;
  std::string group;  // the prefill node's PD group
  std::optional<Lease> prefill_lease;
  std::optional<Lease> decode_lease;
  bool prefilled = false;  // concurrent PD: the prefill finished before the decode was placed
  double first_token = -1.0;
  double last_token = -1.0;
  std::uint32_t tokens = 0;
  std::uint32_t cached = 0;
  std::uint32_t klass = 0;  // traffic class (ClusterConfig::classes)
};

constexpr std::uint32_t kMaxRunSteps = 1u << 20;

// A request has at most one live ticket per role: its id and the role make the ticket's.
std::uint64_t ticket_of(std::uint64_t request, Role role) {
  return request * 2 + (role == Role::kDecode ? 1 : 0);
}
std::uint64_t request_of_ticket(std::uint64_t ticket) { return ticket / 2; }
Role role_of_ticket(std::uint64_t ticket) { return ticket % 2 ? Role::kDecode : Role::kPrefill; }

TimePoint at_seconds(double t) {
  return TimePoint{Duration{static_cast<Duration::rep>(std::llround(t * 1e9))}};
}
double seconds_at(TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string group_name(std::uint32_t group) { return "g" + std::to_string(group); }

class Simulation final : public proxy::TransferModel,
                         public proxy::FreshCacheOracle,
                         public proxy::SchedulerObserver {
 public:
  Simulation(const ClusterConfig& config, const engine::CostModel& prefill_cost,
             const engine::CostModel& decode_cost, RequestSource& source,
             std::unique_ptr<sched::PlacementPolicy> policy, const RecordSink& sink,
             const DecisionSink& decision_sink, const GatewayInputSink& inputs)
      : config_(config),
        decode_cost_(decode_cost),
        source_(source),
        sink_(sink),
        decision_sink_(decision_sink),
        inputs_(inputs),
        policy_name_(policy->name()),
        downstream_(config.gateway.observer),
        core_(clock_, gateway_options(config, *this, *this, *this), std::move(policy)) {
    instances_.reserve(config.prefill_instances + config.decode_instances);
    std::vector<proxy::NodeSpec> nodes;
    for (std::uint32_t i = 0; i < config.prefill_instances; ++i) {
      nodes.push_back(add_instance(Role::kPrefill, i, config.prefill_instances,
                                   config.prefill_engine, prefill_cost));
    }
    for (std::uint32_t i = 0; i < config.decode_instances; ++i) {
      nodes.push_back(add_instance(Role::kDecode, i, config.decode_instances, config.decode_engine,
                                   decode_cost));
    }
    core_.set_nodes(nodes);  // ids 0.. in this order: an instance's slot is its node id
    if (inputs_) {
      GatewayInput in;
      in.kind = GatewayInput::Kind::kSetNodes;
      in.nodes = nodes;
      inputs_(in);
    }
    result_.policy = policy_name_;
    for (const TrafficClass& c : config.classes) {
      ClassResult klass;
      klass.name = c.name;
      klass.band = std::string(proxy::band_name(config.gateway.traffic.bands, c.band));
      klass.tenant = c.tenant;
      result_.classes.push_back(std::move(klass));
    }
    label_timeline();
  }

  Result<ClusterResult> run() {
    if (config_.decode_instances == 0) {
      return make_error(ErrorCode::kInvalidArgument, "at least one decode instance is needed");
    }
    pull_arrival();
    if (config_.sample_interval_s > 0) push(first_arrival_, EventKind::kSample, 0);
    if (config_.engine_metrics_interval_s > 0) push(first_arrival_, EventKind::kScrape, 0);
    while (!events_.empty()) {
      const Event event = events_.top();
      events_.pop();
      if (!periodic(event.kind)) --pending_work_;
      now_ = event.t;
      clock_.set(at_seconds(now_));
      ++result_.events;
      dispatch(event);
      if (gateway_dirty_) run_gateway();
    }
    for (auto& [id, flight] : flights_) {
      fail(id, flight, "never finished (the cluster could not admit it)", "never_finished");
    }
    flights_.clear();
    for (const Instance& instance : instances_) {
      result_.preemptions += instance.engine.stats().num_preemptions;
    }
    result_.decode_holds = core_.decode_holds();
    result_.decode_hold_timeouts = core_.decode_hold_timeouts();
    result_.duration_s = std::max(0.0, last_completion_ - first_arrival_);
    result_.arrival_span_s = std::max(0.0, last_arrival_ - first_arrival_);
    return std::move(result_);
  }

  // TransferModel: every prefill-decode pair has the same link in this model.
  double seconds(std::uint64_t prompt_tokens, std::uint32_t, std::uint32_t) const override {
    return decode_cost_.kv_transfer_seconds(prompt_tokens, config_.kv_link_gbps);
  }

  // FreshCacheOracle (what-if only): the engine's exact cache.
  std::uint32_t cached_tokens(std::uint32_t node,
                              std::span<const std::uint64_t> hashes) const override {
    if (node >= instances_.size()) return 0;
    const std::vector<std::uint64_t> copy(hashes.begin(), hashes.end());
    return instances_[node].engine.cached_prefix_tokens(copy);
  }

  // SchedulerObserver: the core's sheds and queue waits are counted per class; every hook is
  // passed on to the observer the configuration gave, if any.
  void on_prefix_lookup(std::uint32_t matched_tokens) override {
    if (downstream_) downstream_->on_prefix_lookup(matched_tokens);
  }
  void on_health_change(const proxy::NodeSpec& node, proxy::NodeHealth from, proxy::NodeHealth to,
                        proxy::HealthCause cause, Duration for_how_long) override {
    if (downstream_) downstream_->on_health_change(node, from, to, cause, for_how_long);
  }
  void on_release(const proxy::NodeSpec& node, Outcome outcome, Duration held) override {
    if (downstream_) downstream_->on_release(node, outcome, held);
  }
  bool wants_placements() const override {
    return downstream_ != nullptr && downstream_->wants_placements();
  }
  void on_placement(const Ticket& ticket, std::span<const proxy::PlacementInput> inputs,
                    std::size_t chosen) override {
    if (downstream_) downstream_->on_placement(ticket, inputs, chosen);
  }
  void on_waited(const Ticket& ticket, const proxy::WaitTimes& waited) override {
    if (downstream_) downstream_->on_waited(ticket, waited);
    if (result_.classes.empty()) return;
    const auto it = flights_.find(request_of_ticket(ticket.id));
    if (it == flights_.end()) return;
    ClassResult& klass = result_.classes[it->second.klass];
    Duration total{};
    for (std::size_t cause = 0; cause < proxy::kWaitCauses; ++cause) {
      total += waited[cause];
      klass.queue_wait_s[cause] += std::chrono::duration<double>(waited[cause]).count();
    }
    if (total > Duration::zero()) ++klass.legs_delayed;
  }
  void on_shed(const Ticket& ticket, proxy::ShedReason reason) override {
    if (downstream_) downstream_->on_shed(ticket, reason);
    shed_[request_of_ticket(ticket.id)] = reason;
  }

 private:
  static proxy::SchedulerOptions gateway_options(const ClusterConfig& config,
                                                 const proxy::TransferModel& transfer,
                                                 const proxy::FreshCacheOracle& oracle,
                                                 proxy::SchedulerObserver& observer) {
    proxy::SchedulerOptions o = config.gateway;
    o.observer = &observer;
    o.aggregated = config.prefill_instances == 0;
    o.block_size =
        o.aggregated ? config.decode_engine.block_size : config.prefill_engine.block_size;
    o.transfer = &transfer;
    o.fresh_cache = config.fresh_cache_oracle ? &oracle : nullptr;
    return o;
  }

  proxy::NodeSpec add_instance(Role role, std::uint32_t index, std::uint32_t pool_size,
                               engine::EngineConfig engine_config, const engine::CostModel& cost) {
    engine_config.emit_kv_events = !config_.fresh_cache_oracle;
    const std::uint64_t seed = config_.seed * 1000003ULL + instances_.size();
    Instance instance(Engine(engine_config, cost, seed));
    instance.role = role;
    instances_.push_back(std::move(instance));
    const std::uint64_t groups = std::max<std::uint32_t>(1, config_.pd_groups);
    const auto group = static_cast<std::uint32_t>(std::uint64_t{index} * groups / pool_size);
    proxy::NodeSpec spec;
    const bool aggregated = config_.prefill_instances == 0;
    spec.name = std::string(role == Role::kPrefill ? "prefill-"
                            : aggregated           ? "instance-"
                                                   : "decode-") +
                std::to_string(index);
    spec.role = role;
    spec.group = group_name(group);
    spec.kv_events = !config_.fresh_cache_oracle;
    return spec;
  }

  void label_timeline() {
    const auto sampled = [&](std::uint32_t pool_size) {
      return std::min(pool_size, config_.timeline_instances);
    };
    for (std::uint32_t i = 0; i < sampled(config_.prefill_instances); ++i) {
      result_.timeline_labels.push_back("prefill-" + std::to_string(i));
      sampled_.push_back(i);
    }
    const bool aggregated = config_.prefill_instances == 0;
    for (std::uint32_t i = 0; i < sampled(config_.decode_instances); ++i) {
      result_.timeline_labels.push_back((aggregated ? "instance-" : "decode-") + std::to_string(i));
      sampled_.push_back(config_.prefill_instances + i);
    }
  }

  static bool periodic(EventKind kind) {
    return kind == EventKind::kSample || kind == EventKind::kScrape;
  }

  void push(double t, EventKind kind, std::uint64_t subject, std::uint64_t version = 0) {
    if (!periodic(kind)) ++pending_work_;
    events_.push(Event{t, kind, next_seq_++, subject, version});
  }

  void dispatch(const Event& event) {
    switch (event.kind) {
      case EventKind::kArrival: return on_arrival();
      case EventKind::kDeliver: return on_deliver(event.subject);
      case EventKind::kStepDone: return on_step_done(instances_[event.subject]);
      case EventKind::kRunDone: {
        Instance& instance = instances_[event.subject];
        if (event.version == instance.version && instance.phase == Phase::kRun) {
          on_run_done(instance);
        }
        return;
      }
      case EventKind::kPrefillReturned: return on_prefill_returned(event.subject);
      case EventKind::kTransferDone: return on_transfer_done(event.subject);
      case EventKind::kKvEvents: return on_kv_events(event.subject);
      case EventKind::kScrape: return on_scrape();
      case EventKind::kGatewayWake:
        wake_at_ = -1.0;
        gateway_dirty_ = true;
        return;
      case EventKind::kSample: return on_sample();
    }
  }

  // --- arrivals and the gateway ------------------------------------------------------------

  void pull_arrival() {
    if (config_.max_requests > 0 && pulled_ >= config_.max_requests) return;
    auto request = source_.next();
    if (!request) return;
    ++pulled_;
    const double scale = config_.time_scale > 0 ? config_.time_scale : 1.0;
    const double at = std::max(now_, request->arrival_s * scale);
    if (pulled_ == 1) first_arrival_ = at;
    last_arrival_ = at;
    next_request_ = std::move(*request);
    push(at, EventKind::kArrival, next_request_.id);
  }

  std::uint32_t block_size() const {
    return config_.prefill_instances > 0 ? config_.prefill_engine.block_size
                                         : config_.decode_engine.block_size;
  }
  bool aggregated() const { return config_.prefill_instances == 0; }

  // The periodic events (samples, scrapes) keep going while anything else can still happen: a
  // request stuck where nothing will ever move it (an engine that cannot admit it) ends the run.
  bool work_left() const { return pending_work_ > 0; }

  void on_arrival() {
    const ClusterRequest request = std::move(next_request_);
    pull_arrival();
    Flight flight;
    flight.arrival = now_;
    flight.klass =
        static_cast<std::uint32_t>(class_of_request(config_.classes, config_.seed, request.id));
    if (!result_.classes.empty()) ++result_.classes[flight.klass].requests;
    flight.prompt = request.prompt_tokens;
    flight.output = std::max<std::uint32_t>(1, request.output_tokens);
    auto hashes = engine_block_hashes(request, block_size());
    if (!hashes) {
      fail(request.id, flight, hashes.error().message, "rejected");
      return;
    }
    flight.hashes = std::move(*hashes);
    auto [it, inserted] = flights_.emplace(request.id, std::move(flight));
    if (!inserted) {
      Flight duplicate;
      duplicate.arrival = now_;
      duplicate.klass = it->second.klass;
      fail(request.id, duplicate, "duplicate request id", "rejected");
      return;
    }
    submit(request.id, it->second, aggregated() ? Role::kDecode : Role::kPrefill);
  }

  // A leg for the gateway: the request's first placement (prefill, or the whole request in
  // aggregated mode) or its PD decode leg.
  void submit(std::uint64_t id, Flight& flight, Role role) {
    Ticket ticket;
    ticket.id = ticket_of(id, role);
    ticket.role = role;
    ticket.prompt_tokens = flight.prompt;
    ticket.max_tokens = flight.output;
    ticket.arrival = at_seconds(flight.arrival);
    const bool prefills = role == Role::kPrefill || aggregated();
    if (prefills) ticket.block_hashes = flight.hashes;
    if (role == Role::kDecode && !aggregated()) {
      ticket.group = flight.group;
      ticket.prefill_node = static_cast<std::uint32_t>(flight.prefill);
    }
    if (!config_.classes.empty()) {
      const TrafficClass& klass = config_.classes[flight.klass];
      ticket.band = klass.band;
      ticket.tenant = klass.tenant;
      ticket.tenant_weight = klass.tenant_weight;
      ticket.tenant_node_share = klass.tenant_node_share;
    }
    if (inputs_) {
      GatewayInput in;
      in.kind = GatewayInput::Kind::kSubmit;
      in.t = now_;
      in.ticket = ticket;
      inputs_(in);
    }
    if (Status submitted = core_.submit(std::move(ticket)); !submitted) {
      auto it = flights_.find(id);
      fail(id, it->second, submitted.error().message, gateway_failure(id, submitted.error()));
      flights_.erase(it);
      return;
    }
    gateway_dirty_ = true;
  }

  // The gateway core decides what it can now; a decision may submit a new leg (concurrent PD
  // places its decode once the prefill is placed), so it runs until nothing new is decided.
  void run_gateway() {
    while (gateway_dirty_) {
      gateway_dirty_ = false;
      decisions_.clear();
      core_.schedule(decisions_);
      if (inputs_) {
        GatewayInput in;
        in.kind = GatewayInput::Kind::kSchedule;
        in.t = now_;
        in.decisions = decisions_;
        inputs_(in);
      }
      for (Decision& decision : decisions_) on_decision(decision);
    }
    const auto next = core_.next_deadline();
    if (!next) return;
    const double t = seconds_at(*next);
    if (t > now_ && (wake_at_ < 0 || t < wake_at_)) {
      wake_at_ = t;
      push(t, EventKind::kGatewayWake, 0);
    }
  }

  void on_decision(Decision& decision) {
    const std::uint64_t id = request_of_ticket(decision.ticket);
    const Role role = role_of_ticket(decision.ticket);
    auto it = flights_.find(id);
    if (it == flights_.end()) return;
    Flight& flight = it->second;
    if (decision_sink_) {
      decision_sink_(GatewayDecision{
          now_, id, role, decision.lease ? static_cast<std::int32_t>(decision.lease->node) : -1});
    }
    if (!decision.lease) {
      fail(id, flight, decision.lease.error().message, gateway_failure(id, decision.lease.error()));
      flights_.erase(it);
      return;
    }
    const Lease& lease = *decision.lease;
    if (role == Role::kPrefill) {
      flight.prefill = static_cast<std::int32_t>(lease.node);
      flight.prefill_lease = lease;
      flight.group = group_name_of(lease.node);
      push(now_ + config_.network_latency_s, EventKind::kDeliver, id);
      if (config_.pattern == PdPattern::kConcurrent) submit(id, flight, Role::kDecode);
      return;
    }
    flight.decode = static_cast<std::int32_t>(lease.node);
    flight.decode_lease = lease;
    if (aggregated()) {
      push(now_ + config_.network_latency_s, EventKind::kDeliver, id);
    } else if (config_.pattern == PdPattern::kSequential || flight.prefilled) {
      push(now_ + config_.network_latency_s + transfer_seconds(flight), EventKind::kTransferDone,
           id);
    }
  }

  // The failure kind of a leg the gateway refused: shed (a sheddable band gave it up, the
  // observer said why), rejected (the queue was full), timed_out or unavailable.
  const char* gateway_failure(std::uint64_t id, const Error& error) {
    if (auto shed = shed_.find(id); shed != shed_.end()) {
      const std::string reason(proxy::shed_reason_name(shed->second));
      shed_.erase(shed);
      ++result_.shed_by_reason[reason];
      if (auto it = flights_.find(id); it != flights_.end() && !result_.classes.empty()) {
        ++result_.classes[it->second.klass].shed_by_reason[reason];
      }
      return "shed";
    }
    switch (error.code) {
      case ErrorCode::kTimeout: return "timed_out";
      case ErrorCode::kResourceExhausted: return "rejected";
      default: return "unavailable";
    }
  }

  std::string group_name_of(std::uint32_t node) const {
    const std::uint32_t index =
        node < config_.prefill_instances ? node : node - config_.prefill_instances;
    const std::uint32_t pool =
        node < config_.prefill_instances ? config_.prefill_instances : config_.decode_instances;
    const std::uint64_t groups = std::max<std::uint32_t>(1, config_.pd_groups);
    return group_name(static_cast<std::uint32_t>(std::uint64_t{index} * groups / pool));
  }

  void release(std::optional<Lease>& lease, Outcome outcome) {
    if (!lease) return;
    if (inputs_) {
      GatewayInput in;
      in.kind = GatewayInput::Kind::kRelease;
      in.t = now_;
      in.lease = *lease;
      in.outcome = outcome;
      inputs_(in);
    }
    core_.release(*lease, outcome);
    lease.reset();
    gateway_dirty_ = true;
  }

  // The request reaches its first instance: the prefill one, or in aggregated mode the only one.
  void on_deliver(std::uint64_t id) {
    auto it = flights_.find(id);
    if (it == flights_.end()) return;
    Flight& flight = it->second;
    SeqSpec spec;
    spec.id = id;
    spec.prompt_tokens = flight.prompt;
    spec.arrival_time = flight.arrival;
    spec.block_hashes = flight.hashes;
    if (!aggregated()) {
      spec.max_output_tokens = 1;
      spec.prefill_only = true;
      enqueue(static_cast<std::size_t>(flight.prefill), std::move(spec));
    } else {
      spec.max_output_tokens = flight.output;
      enqueue(static_cast<std::size_t>(flight.decode), std::move(spec));
    }
  }

  // PD, sequential: the prefill's answer is back at the gateway, which now places the decode.
  void on_prefill_returned(std::uint64_t id) {
    auto it = flights_.find(id);
    if (it == flights_.end()) return;
    submit(id, it->second, Role::kDecode);
  }

  double transfer_seconds(const Flight& flight) const {
    return decode_cost_.kv_transfer_seconds(flight.prompt, config_.kv_link_gbps);
  }

  // The KV has reached the decode instance: it decodes; the prefill instance frees the blocks.
  void on_transfer_done(std::uint64_t id) {
    auto it = flights_.find(id);
    if (it == flights_.end()) return;
    Flight& flight = it->second;
    Instance& prefill = instances_[static_cast<std::size_t>(flight.prefill)];
    prefill.pending_releases.push_back(id);
    wake(prefill);
    SeqSpec spec;
    spec.id = id;
    spec.prompt_tokens = flight.prompt;
    spec.max_output_tokens = flight.output;
    spec.kv_preloaded = true;
    spec.arrival_time = flight.arrival;
    enqueue(static_cast<std::size_t>(flight.decode), std::move(spec));
  }

  // --- what the gateway learns from the engines -------------------------------------------

  void publish_kv_events(Instance& instance, std::vector<kvcache::KVEvent>&& events) {
    if (events.empty()) return;
    kvcache::KVEventBatch batch;
    batch.ts = now_;
    batch.events = std::move(events);
    const std::size_t slot = slot_of(instance);
    if (config_.kv_event_delay_s <= 0) {
      apply_kv_events(static_cast<std::uint32_t>(slot), batch);
      return;
    }
    instance.kv_in_flight.emplace_back(now_ + config_.kv_event_delay_s, std::move(batch));
    push(now_ + config_.kv_event_delay_s, EventKind::kKvEvents, slot);
  }

  void on_kv_events(std::uint64_t slot) {
    Instance& instance = instances_[slot];
    while (!instance.kv_in_flight.empty() && instance.kv_in_flight.front().first <= now_) {
      apply_kv_events(static_cast<std::uint32_t>(slot), instance.kv_in_flight.front().second);
      instance.kv_in_flight.pop_front();
    }
  }

  void apply_kv_events(std::uint32_t node, const kvcache::KVEventBatch& batch) {
    if (inputs_) {
      GatewayInput in;
      in.kind = GatewayInput::Kind::kKvEvents;
      in.t = now_;
      in.node = node;
      in.batch = batch;
      inputs_(in);
    }
    core_.apply_kv_events(node, batch);
  }

  void report_load(const Instance& instance) {
    const proxy::EngineLoad load{instance.running, instance.waiting, instance.kv_usage};
    const auto node = static_cast<std::uint32_t>(slot_of(instance));
    if (inputs_) {
      GatewayInput in;
      in.kind = GatewayInput::Kind::kEngineLoad;
      in.t = now_;
      in.node = node;
      in.load = load;
      inputs_(in);
    }
    core_.report_engine_load(node, load);
  }

  // As omni-proxy's health checker: every engine's own load, once per interval.
  void on_scrape() {
    for (const Instance& instance : instances_) report_load(instance);
    gateway_dirty_ = true;
    if (work_left()) push(now_ + config_.engine_metrics_interval_s, EventKind::kScrape, 0);
  }

  // --- instances --------------------------------------------------------------------------

  void enqueue(std::size_t slot, SeqSpec spec) {
    Instance& instance = instances_[slot];
    instance.pending_adds.push_back(std::move(spec));
    wake(instance);
  }

  void wake(Instance& instance) {
    if (instance.phase == Phase::kIdle) {
      begin_step(instance);
    } else if (instance.phase == Phase::kRun && !instance.run_cut) {
      cut_run(instance);
    }
  }

  std::size_t slot_of(const Instance& instance) const {
    return static_cast<std::size_t>(&instance - instances_.data());
  }

  void apply_pending(Instance& instance) {
    for (const SeqId id : instance.pending_releases) instance.engine.release_held_blocks(id);
    instance.pending_releases.clear();
    for (SeqSpec& spec : instance.pending_adds) {
      const SeqId id = spec.id;
      if (Status status = instance.engine.add(std::move(spec)); !status.ok()) {
        auto it = flights_.find(id);
        if (it != flights_.end()) {
          fail(id, it->second, status.error().message, "rejected");
          flights_.erase(it);
        }
      }
    }
    instance.pending_adds.clear();
  }

  void begin_step(Instance& instance) {
    apply_pending(instance);
    instance.plan = instance.engine.schedule();
    refresh_load(instance);
    if (instance.plan.empty()) {
      instance.phase = Phase::kIdle;
      return;
    }
    instance.phase = Phase::kStep;
    instance.started = now_;
    push(now_ + instance.engine.step_seconds(instance.plan), EventKind::kStepDone,
         slot_of(instance));
  }

  void on_step_done(Instance& instance) {
    engine::StepOutputs outputs = instance.engine.complete(instance.plan);
    ++result_.engine_steps;
    handle_outputs(instance, outputs, 1, now_ - instance.started);
    after_step(instance);
  }

  void on_run_done(Instance& instance) {
    engine::StepOutputs outputs = instance.engine.advance_stable(instance.run_steps);
    ++result_.stable_runs;
    result_.stable_steps += instance.run_steps;
    handle_outputs(instance, outputs, instance.run_steps, now_ - instance.started);
    after_step(instance);
  }

  void after_step(Instance& instance) {
    refresh_load(instance);
    if (config_.fast_forward && instance.pending_adds.empty() &&
        instance.pending_releases.empty()) {
      const auto run = instance.engine.stable_decode_run(kMaxRunSteps);
      if (run.steps >= 2) {
        instance.phase = Phase::kRun;
        instance.started = now_;
        instance.run_steps = run.steps;
        instance.run_cut = false;
        ++instance.version;
        push(now_ + run.seconds, EventKind::kRunDone, slot_of(instance), instance.version);
        return;
      }
    }
    begin_step(instance);
  }

  // Something arrived for an instance in a multi-step run: the run ends with the step in
  // progress, so that the newcomer joins at the next step boundary.
  void cut_run(Instance& instance) {
    instance.run_cut = true;
    // The steps that started before now: those done plus the one in progress.
    const double elapsed = now_ - instance.started;
    const std::uint32_t keep = std::max<std::uint32_t>(
        1, instance.engine.stable_decode_run(instance.run_steps, elapsed).steps);
    if (keep >= instance.run_steps) return;
    instance.run_steps = keep;
    ++instance.version;
    push(instance.started + instance.engine.stable_decode_run(keep).seconds, EventKind::kRunDone,
         slot_of(instance), instance.version);
  }

  void refresh_load(Instance& instance) {
    const engine::EngineStats stats = instance.engine.stats();
    instance.running = stats.num_running;
    instance.waiting = stats.num_waiting;
    instance.kv_usage = stats.kv_cache_usage;
    if (config_.engine_metrics_interval_s <= 0) {
      report_load(instance);
      gateway_dirty_ = true;
    }
  }

  // --- outputs ----------------------------------------------------------------------------

  void handle_outputs(Instance& instance, engine::StepOutputs& outputs, std::uint32_t steps,
                      double span) {
    publish_kv_events(instance, std::move(outputs.events));
    for (const engine::SeqOutput& output : outputs.outputs) {
      auto it = flights_.find(output.id);
      if (it == flights_.end()) continue;
      if (instance.role == Role::kPrefill) {
        if (output.finish != FinishReason::kNone) on_prefill_finished(it, output);
        continue;
      }
      Flight& flight = it->second;
      if (output.new_tokens > 0) record_tokens(flight, output, steps, span);
      if (output.finish != FinishReason::kNone) finish(it, output.finish);
    }
  }

  void record_tokens(Flight& flight, const engine::SeqOutput& output, std::uint32_t steps,
                     double span) {
    if (flight.first_token < 0) {
      flight.first_token = now_;
      if (aggregated()) {  // the prefill part of a whole request ends with its first token
        flight.cached = output.num_cached_tokens;
        if (flight.decode_lease) {
          if (inputs_) {
            GatewayInput in;
            in.kind = GatewayInput::Kind::kFirstToken;
            in.t = now_;
            in.lease = *flight.decode_lease;
            inputs_(in);
          }
          core_.first_token(*flight.decode_lease);
        }
        gateway_dirty_ = true;
      }
    } else if (steps == 1) {
      result_.itl_ms.add((now_ - flight.last_token) * 1e3);
    } else {
      // A multi-step run: every step brought this sequence one chunk; their gaps average out.
      result_.itl_ms.add(span / steps * 1e3, steps);
    }
    flight.tokens = output.total_output_tokens;
    flight.last_token = now_;
  }

  void on_prefill_finished(std::unordered_map<std::uint64_t, Flight>::iterator it,
                           const engine::SeqOutput& output) {
    Flight& flight = it->second;
    const bool ok = output.finish == FinishReason::kPrefillDone ||
                    output.finish == FinishReason::kLength || output.finish == FinishReason::kStop;
    release(flight.prefill_lease, ok ? Outcome::kSuccess : Outcome::kNeutral);
    if (!ok) {
      fail(it->first, flight, "prefill failed", "aborted");
      flights_.erase(it);
      return;
    }
    flight.cached = output.num_cached_tokens;
    if (config_.pattern == PdPattern::kSequential) {
      push(now_ + config_.network_latency_s, EventKind::kPrefillReturned, it->first);
    } else if (flight.decode >= 0) {
      push(now_ + transfer_seconds(flight), EventKind::kTransferDone, it->first);
    } else {
      flight.prefilled = true;  // its decode leg is still held: the transfer starts when placed
    }
  }

  void finish(std::unordered_map<std::uint64_t, Flight>::iterator it, FinishReason reason) {
    Flight& flight = it->second;
    if (reason != FinishReason::kLength && reason != FinishReason::kStop) {
      fail(it->first, flight, "aborted by the engine", "aborted");
      flights_.erase(it);
      return;
    }
    release(flight.decode_lease, Outcome::kSuccess);
    const double back = config_.network_latency_s;  // the answer's way back to the client
    RequestRecord record;
    record.id = it->first;
    record.arrival_s = flight.arrival;
    record.ttft_s = flight.first_token + back - flight.arrival;
    record.e2e_s = flight.last_token + back - flight.arrival;
    record.tpot_s = flight.tokens > 1 ? (flight.last_token - flight.first_token) /
                                            static_cast<double>(flight.tokens - 1)
                                      : 0.0;
    record.prompt_tokens = flight.prompt;
    record.output_tokens = flight.tokens;
    record.cached_tokens = flight.cached;
    record.prefill_instance = flight.prefill;
    record.decode_instance = pool_index(flight.decode);
    if (!config_.classes.empty()) record.traffic_class = static_cast<std::int32_t>(flight.klass);
    account(record);
    flights_.erase(it);
  }

  // A decode slot as an index into the decode pool (-1: none).
  std::int32_t pool_index(std::int32_t decode_slot) const {
    return decode_slot < 0 ? -1
                           : decode_slot - static_cast<std::int32_t>(config_.prefill_instances);
  }

  void account(const RequestRecord& record) {
    ++result_.completed;
    result_.ttft_ms.add(record.ttft_s * 1e3);
    result_.e2e_ms.add(record.e2e_s * 1e3);
    if (record.output_tokens > 1) result_.tpot_ms.add(record.tpot_s * 1e3);
    result_.prompt_tokens += record.prompt_tokens;
    result_.output_tokens += record.output_tokens;
    result_.cached_tokens += record.cached_tokens;
    const Slo& slo = config_.slo;
    const bool ttft_ok = slo.ttft_s <= 0 || record.ttft_s <= slo.ttft_s;
    const bool tpot_ok = slo.tpot_s <= 0 || record.tpot_s <= slo.tpot_s;
    const bool e2e_ok = slo.e2e_s <= 0 || record.e2e_s <= slo.e2e_s;
    const bool good = ttft_ok && tpot_ok && e2e_ok;
    if (good) ++result_.good;
    if (record.traffic_class >= 0) {
      ClassResult& klass = result_.classes[static_cast<std::size_t>(record.traffic_class)];
      ++klass.completed;
      klass.ttft_ms.add(record.ttft_s * 1e3);
      klass.e2e_ms.add(record.e2e_s * 1e3);
      if (good) ++klass.good;
    }
    last_completion_ = std::max(last_completion_, now_ + config_.network_latency_s);
    if (sink_) sink_(record);
  }

  // Counts a request that cannot finish and hands its leases back to the gateway. The caller
  // erases the flight.
  void fail(std::uint64_t id, Flight& flight, const std::string& why, const char* kind) {
    release(flight.prefill_lease, Outcome::kNeutral);
    release(flight.decode_lease, Outcome::kNeutral);
    ++result_.failed;
    ++result_.failed_by_kind[kind];
    if (!result_.classes.empty()) {
      ClassResult& klass = result_.classes[flight.klass];
      ++klass.failed;
      ++klass.failed_by_kind[kind];
    }
    if (sink_) {
      RequestRecord record;
      record.id = id;
      record.arrival_s = flight.arrival;
      record.prompt_tokens = flight.prompt;
      record.prefill_instance = flight.prefill;
      record.decode_instance = pool_index(flight.decode);
      record.ok = false;
      record.error = why;
      if (!config_.classes.empty()) record.traffic_class = static_cast<std::int32_t>(flight.klass);
      sink_(record);
    }
  }

  // --- observation ------------------------------------------------------------------------

  void on_sample() {
    TimelinePoint point;
    point.t = now_;
    for (const std::size_t slot : sampled_) {
      const Instance& instance = instances_[slot];
      point.waiting.push_back(instance.waiting);
      point.running.push_back(instance.running);
      point.kv_usage.push_back(instance.kv_usage);
    }
    const std::size_t p = config_.prefill_instances;
    point.mean_waiting_prefill =
        mean_of(0, p, [](const Instance& i) { return static_cast<double>(i.waiting); });
    point.mean_waiting_decode = mean_of(
        p, instances_.size(), [](const Instance& i) { return static_cast<double>(i.waiting); });
    point.mean_kv_usage_decode =
        mean_of(p, instances_.size(), [](const Instance& i) { return i.kv_usage; });
    result_.timeline.push_back(std::move(point));
    if (work_left()) push(now_ + config_.sample_interval_s, EventKind::kSample, 0);
  }

  template <class F>
  double mean_of(std::size_t from, std::size_t to, F value) const {
    if (to <= from) return 0.0;
    double sum = 0.0;
    for (std::size_t i = from; i < to; ++i) sum += value(instances_[i]);
    return sum / static_cast<double>(to - from);
  }

  const ClusterConfig& config_;
  const engine::CostModel& decode_cost_;
  RequestSource& source_;
  const RecordSink& sink_;
  const DecisionSink& decision_sink_;
  const GatewayInputSink& inputs_;
  std::string policy_name_;
  proxy::SchedulerObserver* downstream_;  // the configuration's observer, if any
  std::unordered_map<std::uint64_t, proxy::ShedReason> shed_;  // request id → why it was shed
  ManualClock clock_;
  proxy::Scheduler core_;  // the gateway: the very object omni-proxy runs

  std::vector<Instance> instances_;
  std::vector<std::size_t> sampled_;
  std::unordered_map<std::uint64_t, Flight> flights_;
  std::vector<Decision> decisions_;  // reused by every gateway pass
  bool gateway_dirty_ = false;       // something the gateway should look at happened
  std::uint64_t pending_work_ = 0;   // queued events other than samples and scrapes
  double wake_at_ = -1.0;            // a pending kGatewayWake, if any
  std::priority_queue<Event, std::vector<Event>, LaterFirst> events_;
  ClusterRequest next_request_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t pulled_ = 0;
  double now_ = 0.0;
  double first_arrival_ = 0.0;
  double last_arrival_ = 0.0;
  double last_completion_ = 0.0;
  ClusterResult result_;
};

}  // namespace

double ClusterResult::request_throughput() const {
  return duration_s > 0 ? static_cast<double>(completed) / duration_s : 0.0;
}
double ClusterResult::output_token_throughput() const {
  return duration_s > 0 ? static_cast<double>(output_tokens) / duration_s : 0.0;
}
double ClusterResult::goodput() const {
  return duration_s > 0 ? static_cast<double>(good) / duration_s : 0.0;
}
double ClusterResult::goodput_offered() const {
  const double span = arrival_span_s > 0 ? arrival_span_s : duration_s;
  return span > 0 ? static_cast<double>(good) / span : 0.0;
}
double ClassResult::goodput_offered(const ClusterResult& run) const {
  const double span = run.arrival_span_s > 0 ? run.arrival_span_s : run.duration_s;
  return span > 0 ? static_cast<double>(good) / span : 0.0;
}
double ClusterResult::prefix_cache_hit_rate() const {
  return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / static_cast<double>(prompt_tokens)
                           : 0.0;
}

Result<ClusterResult> simulate(const ClusterConfig& config, const engine::CostModel& prefill_cost,
                               const engine::CostModel& decode_cost, RequestSource& source,
                               std::unique_ptr<sched::PlacementPolicy> policy,
                               const RecordSink& sink, const DecisionSink& decisions,
                               const GatewayInputSink& inputs) {
  if (!policy) return make_error(ErrorCode::kInvalidArgument, "no gateway policy");
  Simulation simulation(config, prefill_cost, decode_cost, source, std::move(policy), sink,
                        decisions, inputs);
  return simulation.run();
}

}  // namespace omni::cluster
