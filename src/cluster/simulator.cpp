#include "omni/cluster/simulator.hpp"
#include "omni/sched/policy.hpp"
#include "omni/sched/prefix_index.hpp"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <utility>

namespace omni::cluster {
namespace {

using engine::Engine;
using engine::FinishReason;
using engine::SeqId;
using engine::SeqSpec;

// Equal times are ordered by kind, then by insertion: engine progress first, then gateway
// decisions, then new arrivals, then observation.
enum class EventKind : std::uint8_t {
  kStepDone,
  kRunDone,
  kPrefillReturned,
  kTransferDone,
  kDecodeDeadline,
  kDeliver,
  kArrival,
  kSample,
};

struct Event {
  double t = 0.0;
  EventKind kind = EventKind::kArrival;
  std::uint64_t seq = 0;
  std::uint64_t subject = 0;  // instance index, or request id
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

struct Instance {
  explicit Instance(Engine e) : engine(std::move(e)) {}
  Engine engine;
  Role role = Role::kMixed;
  InstanceLoad* load = nullptr;
  Phase phase = Phase::kIdle;
  engine::StepPlan plan;
  double started = 0.0;  // start of the step or run in flight
  std::uint32_t run_steps = 0;
  bool run_cut = false;
  std::uint64_t version = 0;
  std::vector<SeqSpec> pending_adds;  // applied at the next step boundary
  std::vector<SeqId> pending_releases;
};

struct Flight {
  double arrival = 0.0;
  std::uint32_t prompt = 0;
  std::uint32_t output = 0;
  std::vector<std::uint64_t> hashes;
  std::int32_t prefill = -1;
  std::int32_t decode = -1;
  double first_token = -1.0;
  double last_token = -1.0;
  std::uint32_t tokens = 0;
  std::uint32_t cached = 0;
  double dispatched = 0.0;       // when the gateway placed it on its first instance
  std::uint32_t queued = 0;      // uncached prompt tokens counted in that instance's queue
  bool long_prefill = false;     // counted in that instance's queued_long_prefills
  bool prefill_counted = false;  // in its prefill instance's outstanding load
  bool decode_counted = false;   // in its decode instance's outstanding load
};

constexpr std::uint32_t kMaxRunSteps = 1u << 20;

class Simulation final : public ClusterView {
 public:
  Simulation(const ClusterConfig& config, const engine::CostModel& prefill_cost,
             const engine::CostModel& decode_cost, RequestSource& source, RouterPolicy& policy,
             const RecordSink& sink)
      : config_(config),
        decode_cost_(decode_cost),
        source_(source),
        policy_(policy),
        sink_(sink),
        predicted_(sched::PrefixIndexOptions{std::size_t{1} << 22, config.predicted_ttl_s}) {
    prefill_loads_.resize(config.prefill_instances);
    decode_loads_.resize(config.decode_instances);
    instances_.reserve(config.prefill_instances + config.decode_instances);
    const bool aggregated = config.prefill_instances == 0;
    for (std::uint32_t i = 0; i < config.prefill_instances; ++i) {
      add_instance(Role::kPrefill, i, prefill_loads_, config.prefill_engine, prefill_cost);
    }
    for (std::uint32_t i = 0; i < config.decode_instances; ++i) {
      add_instance(aggregated ? Role::kMixed : Role::kDecode, i, decode_loads_,
                   config.decode_engine, decode_cost);
    }
    last_prefill_done_.assign(instances_.size(), 0.0);
    result_.policy = std::string(policy.name());
    label_timeline();
  }

  Result<ClusterResult> run() {
    if (config_.decode_instances == 0) {
      return make_error(ErrorCode::kInvalidArgument, "at least one decode instance is needed");
    }
    pull_arrival();
    if (config_.sample_interval_s > 0) push(first_arrival_, EventKind::kSample, 0);
    while (!events_.empty()) {
      const Event event = events_.top();
      events_.pop();
      now_ = event.t;
      ++result_.events;
      dispatch(event);
      // Prefilled requests first: their KV already occupies a prefill node.
      if (released_ && !decode_held_.empty()) retry_decode_held();
      if (released_ && !held_.empty()) retry_held();
      released_ = false;
    }
    for (auto& [id, flight] : flights_) {
      fail(id, flight, "never finished (the cluster could not admit it)", "never_finished");
    }
    flights_.clear();
    for (const Instance& instance : instances_) {
      result_.preemptions += instance.engine.stats().num_preemptions;
    }
    result_.duration_s = std::max(0.0, last_completion_ - first_arrival_);
    result_.arrival_span_s = std::max(0.0, last_arrival_ - first_arrival_);
    return std::move(result_);
  }

  // ClusterView
  std::span<const InstanceLoad> prefill() const override { return prefill_loads_; }
  std::span<const InstanceLoad> decode() const override { return decode_loads_; }
  // What the gateway's prefix index knows: the engine's cache exactly (a perfectly fresh KV-event
  // feed) and, for the blocks of requests routed there whose prefill has not stored them yet,
  // the approximate entries inserted at dispatch.
  std::uint32_t cached_prefix_tokens(Role pool, std::uint32_t index,
                                     std::span<const std::uint64_t> hashes) const override {
    const std::size_t at = pool == Role::kPrefill ? index : config_.prefill_instances + index;
    if (at >= instances_.size()) return 0;
    const std::vector<std::uint64_t> copy(hashes.begin(), hashes.end());
    const std::uint32_t exact = instances_[at].engine.cached_prefix_tokens(copy);
    const std::uint32_t predicted =
        predicted_.match_instance(static_cast<sched::InstanceId>(at), hashes, now_) * block_size();
    return std::max(exact, predicted);
  }
  std::uint32_t block_size() const override {
    return config_.prefill_instances > 0 ? config_.prefill_engine.block_size
                                         : config_.decode_engine.block_size;
  }

 private:
  void add_instance(Role role, std::uint32_t index, std::vector<InstanceLoad>& loads,
                    const engine::EngineConfig& engine_config, const engine::CostModel& cost) {
    InstanceLoad& load = loads[index];
    load.index = index;
    load.role = role;
    const auto pool_size = static_cast<std::uint64_t>(loads.size());
    const std::uint64_t groups = std::max<std::uint32_t>(1, config_.pd_groups);
    load.group = static_cast<std::uint32_t>(std::uint64_t{index} * groups / pool_size);
    const std::uint64_t seed = config_.seed * 1000003ULL + instances_.size();
    Instance instance(Engine(engine_config, cost, seed));
    instance.role = role;
    instance.load = &load;
    instances_.push_back(std::move(instance));
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

  void push(double t, EventKind kind, std::uint64_t subject, std::uint64_t version = 0) {
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
      case EventKind::kDecodeDeadline: return on_decode_deadline(event.subject);
      case EventKind::kSample: return on_sample();
    }
  }

  // --- arrivals and routing -------------------------------------------------------------

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

  RoutingRequest routing_view(std::uint64_t id, const Flight& flight,
                              bool awaiting_decode = false) const {
    return RoutingRequest{
        id, now_, flight.arrival, flight.prompt, flight.output, flight.hashes, awaiting_decode};
  }

  void on_arrival() {
    const ClusterRequest request = std::move(next_request_);
    pull_arrival();
    Flight flight;
    flight.arrival = now_;
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
      fail(request.id, duplicate, "duplicate request id", "rejected");
      return;
    }
    if (!place(request.id, it->second)) held_.push_back(request.id);
  }

  // The gateway's first placement: the prefill instance (PD) or the only one (aggregated).
  // False when the policy holds the request at the gateway.
  bool place(std::uint64_t id, Flight& f) {
    const RoutingRequest view = routing_view(id, f);
    if (config_.prefill_instances == 0) {
      const auto chosen = policy_.choose_decode(view, nullptr, *this);
      if (!chosen) return false;
      count_decode(f, *chosen);
      count_prefill_queue(f, decode_loads_[static_cast<std::size_t>(f.decode)], Role::kMixed);
    } else {
      const auto chosen = policy_.choose_prefill(view, *this);
      if (!chosen) return false;
      f.prefill = static_cast<std::int32_t>(std::min(*chosen, config_.prefill_instances - 1));
      InstanceLoad& load = prefill_loads_[static_cast<std::size_t>(f.prefill)];
      load.outstanding_requests += 1;
      load.outstanding_tokens += f.prompt;
      f.prefill_counted = true;
      count_prefill_queue(f, load, Role::kPrefill);
      if (config_.pattern == PdPattern::kConcurrent) choose_decode(f, view, &load);
    }
    f.dispatched = now_;
    push(now_ + config_.network_latency_s, EventKind::kDeliver, id);
    return true;
  }

  // The uncached part of the prompt joins the instance's prefill queue (what a gateway that
  // knows the prefix index would count).
  void count_prefill_queue(Flight& f, InstanceLoad& load, Role role) {
    const std::uint32_t cached = cached_prefix_tokens(role, load.index, f.hashes);
    const std::size_t slot = role == Role::kPrefill ? load.index
                                                    : config_.prefill_instances + load.index;
    predicted_.insert_predicted(static_cast<sched::InstanceId>(slot), f.hashes, now_);
    f.queued = f.prompt - std::min(f.prompt, cached);
    load.queued_prefill_tokens += f.queued;
    f.long_prefill = f.queued >= sched::kLongPrefillTokens;
    if (f.long_prefill) ++load.queued_long_prefills;
  }

  void release_prefill_queue(Flight& f, InstanceLoad& load, std::size_t slot, bool observe) {
    load.queued_prefill_tokens -= std::min<std::uint64_t>(load.queued_prefill_tokens, f.queued);
    if (f.long_prefill && load.queued_long_prefills > 0) --load.queued_long_prefills;
    f.long_prefill = false;
    if (observe) {
      const double busy_from = std::max(f.dispatched, last_prefill_done_[slot]);
      policy_.on_prefill_done(load.index, f.queued, now_ - busy_from);
      last_prefill_done_[slot] = now_;
    }
    f.queued = 0;
    released_ = true;
  }

  // Load was released somewhere: place held requests in the policy's order until one is held
  // again (head-of-line in score order, so a held request is never overtaken by a worse one).
  void retry_held() {
    if (held_.empty()) return;
    scored_.clear();
    for (const std::uint64_t id : held_) {
      auto it = flights_.find(id);
      if (it == flights_.end()) continue;
      scored_.emplace_back(policy_.queue_score(routing_view(id, it->second)), id);
    }
    std::sort(scored_.begin(), scored_.end());
    held_.clear();
    bool blocked = false;
    for (const auto& [score, id] : scored_) {
      Flight& f = flights_.find(id)->second;
      if (blocked || !place(id, f)) {
        blocked = true;
        held_.push_back(id);
      }
    }
  }

  void choose_decode(Flight& flight, const RoutingRequest& view, const InstanceLoad* prefill) {
    // Concurrent PD picks both legs at arrival: no holding there.
    const auto chosen = policy_.choose_decode(view, prefill, *this);
    count_decode(flight, chosen ? *chosen : least_loaded_decode(flight));
  }

  void count_decode(Flight& flight, std::uint32_t chosen) {
    flight.decode = static_cast<std::int32_t>(std::min(chosen, config_.decode_instances - 1));
    InstanceLoad& load = decode_loads_[static_cast<std::size_t>(flight.decode)];
    load.outstanding_requests += 1;
    load.outstanding_tokens += std::uint64_t{flight.prompt} + flight.output;
    flight.decode_counted = true;
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
    if (flight.prefill >= 0) {
      spec.max_output_tokens = 1;
      spec.prefill_only = true;
      enqueue(static_cast<std::size_t>(flight.prefill), std::move(spec));
    } else {
      spec.max_output_tokens = flight.output;
      enqueue(decode_slot(flight), std::move(spec));
    }
  }

  std::size_t decode_slot(const Flight& flight) const {
    return config_.prefill_instances + static_cast<std::size_t>(flight.decode);
  }

  void on_prefill_returned(std::uint64_t id) {
    auto it = flights_.find(id);
    if (it == flights_.end()) return;
    if (place_decode(id, it->second)) return;
    ++result_.decode_holds;
    if (decode_held_.size() >= config_.max_decode_held || config_.max_decode_wait_s <= 0) {
      ++result_.decode_hold_timeouts;
      start_transfer(id, it->second, least_loaded_decode(it->second));
      return;
    }
    decode_held_.push_back(id);
    push(now_ + config_.max_decode_wait_s, EventKind::kDecodeDeadline, id);
  }

  // PD, sequential: the gateway picks the decode node of a prefilled request. False when the
  // policy holds it.
  bool place_decode(std::uint64_t id, Flight& flight) {
    const InstanceLoad& prefill = prefill_loads_[static_cast<std::size_t>(flight.prefill)];
    const auto chosen = policy_.choose_decode(routing_view(id, flight, true), &prefill, *this);
    if (!chosen) return false;
    start_transfer(id, flight, *chosen);
    return true;
  }

  void start_transfer(std::uint64_t id, Flight& flight, std::uint32_t decode) {
    count_decode(flight, decode);
    push(now_ + config_.network_latency_s + transfer_seconds(flight), EventKind::kTransferDone, id);
  }

  // The bound on a held decode: the group's decode instance with the fewest outstanding tokens.
  std::uint32_t least_loaded_decode(const Flight& flight) const {
    const std::uint32_t group = prefill_loads_[static_cast<std::size_t>(flight.prefill)].group;
    const InstanceLoad* best = nullptr;
    for (const InstanceLoad& load : decode_loads_) {
      if (load.group != group) continue;
      if (best == nullptr || load.outstanding_tokens < best->outstanding_tokens) best = &load;
    }
    return best != nullptr ? best->index : 0;
  }

  void on_decode_deadline(std::uint64_t id) {
    const auto held = std::find(decode_held_.begin(), decode_held_.end(), id);
    if (held == decode_held_.end()) return;
    decode_held_.erase(held);
    auto it = flights_.find(id);
    if (it == flights_.end()) return;
    ++result_.decode_hold_timeouts;
    start_transfer(id, it->second, least_loaded_decode(it->second));
  }

  // Decode load was released: place held prefilled requests in the policy's decode order until
  // one is held again.
  void retry_decode_held() {
    scored_.clear();
    for (const std::uint64_t id : decode_held_) {
      auto it = flights_.find(id);
      if (it == flights_.end()) continue;
      scored_.emplace_back(policy_.queue_score(routing_view(id, it->second, true)), id);
    }
    std::sort(scored_.begin(), scored_.end());
    decode_held_.clear();
    bool blocked = false;
    for (const auto& [score, id] : scored_) {
      Flight& f = flights_.find(id)->second;
      if (blocked || !place_decode(id, f)) {
        blocked = true;
        decode_held_.push_back(id);
      }
    }
  }

  double transfer_seconds(const Flight& flight) const {
    return decode_cost_.kv_transfer_seconds(flight.prompt, config_.kv_link_gbps);
  }

 public:
  // Every prefill-decode pair has the same link in this model, so the choice of decode node
  // does not change the transfer; the policy still sees the cost.
  double kv_transfer_seconds(std::uint32_t prompt_tokens, const InstanceLoad&,
                             const InstanceLoad&) const override {
    return decode_cost_.kv_transfer_seconds(prompt_tokens, config_.kv_link_gbps);
  }

 private:
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
    enqueue(decode_slot(flight), std::move(spec));
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
    instance.load->running = stats.num_running;
    instance.load->waiting = stats.num_waiting;
    instance.load->kv_usage = stats.kv_cache_usage;
  }

  // --- outputs ----------------------------------------------------------------------------

  void handle_outputs(Instance& instance, const engine::StepOutputs& outputs, std::uint32_t steps,
                      double span) {
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
      if (flight.prefill < 0) {  // aggregated: the prefill part ends with the first token
        flight.cached = output.num_cached_tokens;
        release_prefill_queue(flight, decode_loads_[static_cast<std::size_t>(flight.decode)],
                              decode_slot(flight), true);
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
    release_prefill_load(flight, true);
    if (output.finish != FinishReason::kPrefillDone && output.finish != FinishReason::kLength &&
        output.finish != FinishReason::kStop) {
      fail(it->first, flight, "prefill failed", "aborted");
      flights_.erase(it);
      return;
    }
    flight.cached = output.num_cached_tokens;
    if (config_.pattern == PdPattern::kSequential) {
      push(now_ + config_.network_latency_s, EventKind::kPrefillReturned, it->first);
    } else {
      push(now_ + transfer_seconds(flight), EventKind::kTransferDone, it->first);
    }
  }

  void finish(std::unordered_map<std::uint64_t, Flight>::iterator it, FinishReason reason) {
    Flight& flight = it->second;
    if (reason != FinishReason::kLength && reason != FinishReason::kStop) {
      fail(it->first, flight, "aborted by the engine", "aborted");
      flights_.erase(it);
      return;
    }
    release_decode_load(flight);
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
    record.decode_instance = flight.decode;
    account(record);
    flights_.erase(it);
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
    if (ttft_ok && tpot_ok && e2e_ok) ++result_.good;
    last_completion_ = std::max(last_completion_, now_ + config_.network_latency_s);
    if (sink_) sink_(record);
  }

  void release_prefill_load(Flight& flight, bool observe) {
    if (!flight.prefill_counted) return;
    flight.prefill_counted = false;
    InstanceLoad& load = prefill_loads_[static_cast<std::size_t>(flight.prefill)];
    load.outstanding_requests -= 1;
    load.outstanding_tokens -= flight.prompt;
    release_prefill_queue(flight, load, static_cast<std::size_t>(flight.prefill), observe);
  }

  void release_decode_load(Flight& flight) {
    if (!flight.decode_counted) return;
    flight.decode_counted = false;
    InstanceLoad& load = decode_loads_[static_cast<std::size_t>(flight.decode)];
    load.outstanding_requests -= 1;
    load.outstanding_tokens -= std::uint64_t{flight.prompt} + flight.output;
    released_ = true;
  }

  // Counts a request that cannot finish and releases the gateway's bookkeeping for it. The
  // caller erases the flight.
  void fail(std::uint64_t id, Flight& flight, const std::string& why, const char* kind) {
    release_prefill_load(flight, false);
    release_decode_load(flight);
    if (flight.prefill < 0 && flight.decode >= 0 && flight.queued > 0) {
      release_prefill_queue(flight, decode_loads_[static_cast<std::size_t>(flight.decode)],
                            decode_slot(flight), false);
    }
    ++result_.failed;
    ++result_.failed_by_kind[kind];
    if (sink_) {
      RequestRecord record;
      record.id = id;
      record.arrival_s = flight.arrival;
      record.prompt_tokens = flight.prompt;
      record.prefill_instance = flight.prefill;
      record.decode_instance = flight.decode;
      record.ok = false;
      record.error = why;
      sink_(record);
    }
  }

  // --- observation ------------------------------------------------------------------------

  void on_sample() {
    TimelinePoint point;
    point.t = now_;
    for (const std::size_t slot : sampled_) {
      const InstanceLoad& load = *instances_[slot].load;
      point.waiting.push_back(load.waiting);
      point.running.push_back(load.running);
      point.kv_usage.push_back(load.kv_usage);
    }
    point.mean_waiting_prefill = mean_of(prefill_loads_, [](const InstanceLoad& l) {
      return static_cast<double>(l.waiting);
    });
    point.mean_waiting_decode = mean_of(decode_loads_, [](const InstanceLoad& l) {
      return static_cast<double>(l.waiting);
    });
    point.mean_kv_usage_decode =
        mean_of(decode_loads_, [](const InstanceLoad& l) { return l.kv_usage; });
    result_.timeline.push_back(std::move(point));
    const bool more = !flights_.empty() || events_.size() > 0;
    if (more) push(now_ + config_.sample_interval_s, EventKind::kSample, 0);
  }

  template <class F>
  static double mean_of(const std::vector<InstanceLoad>& loads, F value) {
    if (loads.empty()) return 0.0;
    double sum = 0.0;
    for (const auto& load : loads) sum += value(load);
    return sum / static_cast<double>(loads.size());
  }

  const ClusterConfig& config_;
  const engine::CostModel& decode_cost_;
  RequestSource& source_;
  RouterPolicy& policy_;
  const RecordSink& sink_;

  std::vector<InstanceLoad> prefill_loads_;
  std::vector<InstanceLoad> decode_loads_;
  std::vector<Instance> instances_;
  std::vector<std::size_t> sampled_;
  std::unordered_map<std::uint64_t, Flight> flights_;
  std::vector<std::uint64_t> held_;         // waiting at the gateway
  std::vector<std::uint64_t> decode_held_;  // prefilled, waiting at the gateway for a decode node
  // Blocks of routed requests, until their prefill stores them.
  sched::PrefixIndex predicted_;
  std::vector<std::pair<double, std::uint64_t>> scored_;
  std::vector<double> last_prefill_done_;  // per instance slot
  bool released_ = false;  // some load was released while handling the current event
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
double ClusterResult::prefix_cache_hit_rate() const {
  return prompt_tokens > 0 ? static_cast<double>(cached_tokens) / static_cast<double>(prompt_tokens)
                           : 0.0;
}

Result<ClusterResult> simulate(const ClusterConfig& config, const engine::CostModel& prefill_cost,
                               const engine::CostModel& decode_cost, RequestSource& source,
                               RouterPolicy& policy, const RecordSink& sink) {
  Simulation simulation(config, prefill_cost, decode_cost, source, policy, sink);
  return simulation.run();
}

}  // namespace omni::cluster
