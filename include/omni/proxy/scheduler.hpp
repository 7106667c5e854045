// Scheduler: the one gateway core. omni-proxy's master (the Dispatcher) and omni-cluster's event
// loop drive this very object through the same calls; nothing of a gateway's decision is written
// twice. No sockets, no threads, no wall clock: time comes from the injected Clock (the
// simulator runs a ManualClock).
//
//   submit(ticket) ──▶ bounded wait queue ──schedule()──▶ Decision{ticket, lease} ─▶ the caller
//        │ full: kResourceExhausted (429)      │ in policy order (queue_score, aging)
//        │                                     │ waited past queue_timeout: Decision{error}
//   first_token(lease) ◀─ aggregated: the prefill part of a whole request ended
//   release(lease, outcome) ◀── the leg ended: load returned, health and node speed learned
//   apply_kv_events(node, batch) ◀── the engines' KV events (the prefix index's exact feed)
//
// Admission: load is counted when a request is dispatched (not when an engine reports it) and
// returned on release. A node is a candidate when it is up (active probes), its circuit is not
// open (passive: consecutive failures eject it for a cool-down, then one trial request decides),
// it is not draining or removed, the ticket has not tried it, its PD group matches, and it is
// under both thresholds. The policy (omni::sched::PlacementPolicy) ranks the candidates, or holds
// the request (nullopt). When no node is a candidate, or the policy holds, the ticket waits:
// admission control. A hold means "nothing of this kind can go now": the pass then places no
// later ticket of the same stage and PD group that has no node excluded (so no worse-ranked
// request overtakes a held one), while tickets that exclude nodes (retries) are still tried.
//
// Decode holding (PD): a decode leg the policy holds (every decode node of its group over its
// limits) waits, its KV staying on its prefill node, for at most max_decode_wait and while at
// most max_decode_held such legs wait; past either bound it goes to the candidate with the fewest
// outstanding tokens. The transfer cost from its prefill node to each candidate comes from the
// TransferModel seam (none: 0).
//
// Prefix index (optional, SchedulerOptions::prefix.enabled): a sched::PrefixIndex keyed by node
// id, fed exactly by the engines' KV events and approximately by inserting a prefill (or
// aggregated) ticket's block hashes on the chosen node with a short TTL. When the policy uses
// prefix matches, every candidate's matched tokens are looked up. A node with an event stream
// that stays silent past `stale_after` although it was sent uncached work is stale: it attracts
// nothing by its cache until its events resume (load-only routing for it). For what-if studies
// a simulator may replace the event feed by a FreshCacheOracle (the engines' exact caches).
//
// Traffic classes (SchedulerOptions::traffic, traffic.hpp): with bands or tenants the pass order
// is FairOrder's (bands strict or weighted, aging, tenants by start-time fair queuing, the
// policy's order inside a tenant) instead of the policy's alone. A sheddable band's tickets are
// refused past its max_waiting, evicted (newest first) to make room for a more urgent ticket
// when the queue is full, and answered kResourceExhausted ("retry later") when they wait past
// their band's timeout. Every ticket's wait is split by cause (WaitCause) for the observer.
//
// Threading: single-threaded; the owner serialises every call (omni-proxy: the Dispatcher's
// master context; the simulator: its event loop).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/kvcache/kv_events.hpp"
#include "omni/proxy/fair_order.hpp"
#include "omni/proxy/policy.hpp"
#include "omni/proxy/traffic.hpp"
#include "omni/sched/policy.hpp"
#include "omni/sched/prefix_index.hpp"

namespace omni::proxy {

using namespace std::chrono_literals;

struct NodeSpec {
  std::string name;  // unique per role; omni-proxy uses the endpoint "host:port"
  Role role = Role::kPrefill;
  std::string group;       // PD group; empty: any
  bool kv_events = false;  // the engine publishes KV events to the proxy (staleness applies)
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

// What the other replicas of a fleet have in flight on a node (docs/fleet.md); zero for a
// gateway that runs alone. The policy and the thresholds see a node's own load plus this.
struct FleetLoad {
  std::uint64_t tokens = 0;         // outstanding tokens, as load.outstanding_tokens
  std::uint64_t prompt_tokens = 0;  // of which prompt tokens, as outstanding_prompt_tokens
  std::uint32_t running = 0;
  friend bool operator==(const FleetLoad&, const FleetLoad&) = default;
};

// Every change of the load this core dispatched itself, as it happens (the fleet sync
// publishes them to the other replicas). Called on the Scheduler's thread; must not call back.
class LoadObserver {
 public:
  virtual ~LoadObserver() = default;
  virtual void on_load_change(const NodeSpec& node, std::int64_t tokens, std::int64_t prompt_tokens,
                              std::int32_t running) = 0;
  // A placement's blocks were inserted in the prefix index as predicted on `node` (they will
  // be there once the engine has prefilled them): the other replicas may predict them too.
  virtual void on_predicted_blocks(const NodeSpec& /*node*/,
                                   std::span<const std::uint64_t> /*hashes*/) {}
};

enum class NodeHealth : int;  // below
enum class Outcome : int;     // below
struct Ticket;                // below

// One candidate of a placement as the policy saw it, with the node it stands for.
struct PlacementInput {
  const NodeSpec* node = nullptr;
  sched::Candidate candidate;
};

// Why a sheddable band's ticket was given up.
enum class ShedReason : std::uint8_t {
  kEvicted,      // the queue was full and a more urgent ticket needed its place
  kBandFull,     // its band already had max_waiting tickets waiting
  kBandTimeout,  // it waited past its band's queue timeout
  kQueueShare,   // the queue was full and its tenant held more of it than the newcomer's
};
std::string_view shed_reason_name(ShedReason reason) noexcept;

// Why a node's health changed (HealthCause names it in logs).
enum class HealthCause {
  kProbeFailed,          // an active /health probe failed: up or trial → down
  kProbeRecovered,       // a probe succeeded: down → up, or ejected → trial
  kConsecutiveFailures,  // failures_to_eject failed requests in a row: → ejected
  kTrialFailed,          // the one trial request after a cool-down failed: → ejected again
  kTrialSucceeded,       // it succeeded: trial → up (the circuit closes)
  kCoolDownOver,         // ejection_time passed: ejected → trial
};
std::string_view health_cause_name(HealthCause cause) noexcept;

// What the Scheduler reports as it happens: its prefix lookups and its nodes' health changes
// (the live layer turns them into metrics and log lines). Called on the Scheduler's thread;
// must not call back into it.
class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // A placement looked the prompt up: the chosen node's match, in tokens.
  virtual void on_prefix_lookup(std::uint32_t matched_tokens) = 0;
  // A node's health changed; `for_how_long`: the cool-down of an ejection, else zero.
  virtual void on_health_change(const NodeSpec& /*node*/, NodeHealth /*from*/, NodeHealth /*to*/,
                                HealthCause /*cause*/, Duration /*for_how_long*/) {}
  // A lease on `node` was released after `held` (dispatch to release), with its outcome.
  virtual void on_release(const NodeSpec& /*node*/, Outcome /*outcome*/, Duration /*held*/) {}
  // A ticket was placed: every candidate the policy weighed (its inputs) and the one chosen.
  // Costly to gather, so only while wants_placements() (the live proxy: at debug log level).
  virtual bool wants_placements() const { return false; }
  virtual void on_placement(const Ticket& /*ticket*/, std::span<const PlacementInput> /*inputs*/,
                            std::size_t /*chosen*/) {}
  // A ticket left the wait queue (placed, refused, timed out, shed or cancelled) after waiting
  // this long for each cause.
  virtual void on_waited(const Ticket& /*ticket*/, const WaitTimes& /*waited*/) {}
  // A ticket of a sheddable band was given up (ShedReason says why).
  virtual void on_shed(const Ticket& /*ticket*/, ShedReason /*reason*/) {}
};

// Seconds to move a prompt's KV from a prefill node to a decode node. Called in the core's
// thread; pure.
class TransferModel {
 public:
  virtual ~TransferModel() = default;
  virtual double seconds(std::uint64_t prompt_tokens, std::uint32_t prefill_node,
                         std::uint32_t decode_node) const = 0;
};

// What-if only: the exact prompt tokens a node holds, as if KV events arrived instantly and
// were never lost (a simulator's engines know). Replaces the event feed of the prefix index.
class FreshCacheOracle {
 public:
  virtual ~FreshCacheOracle() = default;
  virtual std::uint32_t cached_tokens(std::uint32_t node,
                                      std::span<const std::uint64_t> block_hashes) const = 0;
};

struct SchedulerOptions {
  std::size_t queue_capacity = 1024;     // waiting tickets, both roles together
  Duration queue_timeout = 30s;          // longest wait for a node
  NodeLoad node_limits{1'000'000, 256};  // thresholds per node
  std::uint32_t failures_to_eject = 3;   // consecutive failures that open the circuit
  Duration ejection_time = 5s;           // first cool-down; doubles per re-ejection
  Duration max_ejection_time = 60s;
  // At most this share of a role's nodes is ejected at once (at least one may always be), as
  // Envoy's max_ejection_percent: when many nodes fail together the pool stays routable.
  double max_ejection_percent = 50.0;
  bool aggregated = false;  // one engine serves whole requests (decode pool)
  // Aggregated mode: until first_token() says a request's prefill ended, its uncached prompt
  // counts as queued prefill work for uncached / this speed, or until its release.
  double aggregated_prefill_tokens_per_second = 8000;
  // Decode holding (PD): how long, and how many at once, decode legs may wait for the policy.
  Duration max_decode_wait = 2s;
  std::size_t max_decode_held = 4096;
  std::uint32_t block_size = 16;  // the engines' KV block size, tokens
  struct Prefix {
    bool enabled = true;          // own a prefix index
    Duration predicted_ttl = 2s;  // lifetime of a placement's approximate insert
    Duration stale_after = 10s;   // event silence (with uncached work sent) → stale
    std::size_t max_entries = std::size_t{1} << 22;  // (block, node) pairs
  } prefix;
  SchedulerObserver* observer = nullptr;          // not owned; outlives the Scheduler
  LoadObserver* load_observer = nullptr;          // not owned; outlives the Scheduler
  const TransferModel* transfer = nullptr;        // not owned; none: transfers cost 0
  const FreshCacheOracle* fresh_cache = nullptr;  // not owned; what-if studies only
  TrafficOptions traffic;                         // bands, aging (tenants come with tickets)
};

// The prefix index as a whole, for metrics.
struct PrefixIndexReport {
  bool enabled = false;
  sched::PrefixIndexStats stats;
  std::uint64_t lookups = 0;
  std::uint32_t stale_nodes = 0;
};

enum class Outcome : int {
  kSuccess,
  kFailure,  // the node answered wrongly or the connection broke: counts against it
  kNeutral,  // the client went away or cancelled: says nothing about the node
};

struct Ticket {
  std::uint64_t id = 0;  // unique among live tickets
  Role role = Role::kPrefill;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t max_tokens = 0;
  std::string group;                 // decode after prefill: stay in this PD group
  std::vector<std::uint32_t> tried;  // nodes not to use again ("already tried")
  std::uint32_t attempt = 0;
  // When the request reached the gateway (queue aging counts from here, not from this leg's
  // submit); default: the submit time.
  std::optional<TimePoint> arrival;
  // A PD decode leg: the prefill node holding its KV (transfer cost, decode holding).
  std::optional<std::uint32_t> prefill_node;
  // The prompt's block hashes in KV-event form (kvcache::event_int), as the engine will
  // publish them; empty when the proxy could not compute them (no prefix matching then).
  std::vector<std::uint64_t> block_hashes;
  // Traffic classes (traffic.hpp): its band (0 the most urgent), its tenant (0: none) and the
  // tenant's weight in fair queuing.
  std::uint8_t band = 0;
  std::uint32_t tenant = 0;
  double tenant_weight = 1.0;
  // The tenant's share of each node's thresholds (0, 1]; with its band's, the smaller holds.
  double tenant_node_share = 1.0;
};

// Load taken by a dispatched ticket, handed back with release().
struct Lease {
  std::uint64_t ticket = 0;
  std::uint32_t node = 0;
  std::uint64_t tokens = 0;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t uncached_tokens = 0;  // prefill work queued on the node (prefill/aggregated)
  TimePoint dispatched{};
};

struct Decision {
  std::uint64_t ticket = 0;
  Result<Lease> lease;  // kTimeout: waited past queue_timeout; kUnavailable: no node at all
  WaitTimes waited{};   // how long it waited for each cause (the request's receipt)
};

enum class NodeHealth : int { kUp, kDown, kEjected, kTrial };

// A consistent copy of one node's state, for /admin and metrics.
struct NodeStatus {
  std::uint32_t id = 0;
  NodeSpec spec;
  NodeLoad load;
  NodeHealth health = NodeHealth::kUp;
  bool draining = false;
  bool removed = false;  // gone from the configuration; kept until its load drains
  std::uint32_t consecutive_failures = 0;
  std::uint64_t dispatched = 0;
  std::uint64_t failures = 0;
  std::uint64_t outstanding_prompt_tokens = 0;  // load.outstanding_tokens less the outputs
  std::uint64_t queued_prefill_tokens = 0;
  std::uint32_t queued_long_prefills = 0;
  EngineLoad engine;
  FleetLoad fleet;                      // the other replicas' load on it (fleet sync)
  std::uint64_t kv_events_applied = 0;  // event batches applied to the prefix index
  std::uint64_t kv_events_dropped = 0;  // malformed or lost batches
  bool kv_stale = false;
};

class Scheduler {
 public:
  Scheduler(const Clock& clock, SchedulerOptions options,
            std::unique_ptr<sched::PlacementPolicy> policy);
  ~Scheduler();

  // Replaces the node set (reload): nodes with a known name keep their id, load and health;
  // new names get new ids, in the order given; missing ones become removed (never chosen again,
  // forgotten once their load is released). In-flight leases stay valid. Returns each spec's id.
  std::vector<std::uint32_t> set_nodes(const std::vector<NodeSpec>& nodes);
  // kResourceExhausted when the queue is full; kInvalidArgument for a duplicate id.
  Status submit(Ticket ticket);
  // Places what can be placed, in policy order; expires tickets that waited too long.
  // A ticket whose role has no node at all (none configured, or every one tried) fails at
  // once with kUnavailable rather than waiting for nothing.
  std::vector<Decision> schedule();
  // The same, appending to `out`: a caller that keeps the vector allocates nothing per pass.
  void schedule(std::vector<Decision>& out);
  // Returns the lease's load and records the outcome for the node's health; a successful PD
  // prefill lease also teaches the policy the node's speed.
  void release(const Lease& lease, Outcome outcome);
  // Aggregated mode: the request's first token came back, so its prefill part is over (its
  // queued prefill work ends, the node's speed is learned). Optional: without it the prefill
  // part is estimated (aggregated_prefill_tokens_per_second). Idempotent per lease.
  void first_token(const Lease& lease);
  // The earliest time at which schedule() could decide differently with no new call in
  // between (a queue timeout, a decode hold's bound, a circuit reopening, an estimated prefill
  // end); nullopt when nothing waits on time. A simulator wakes the core then.
  std::optional<TimePoint> next_deadline() const;
  // Drops a waiting ticket (the client went away). Returns whether it was waiting.
  bool cancel(std::uint64_t ticket);
  // Active health checks: a failed probe takes a node down; a good one brings it up (and
  // closes an open circuit).
  void report_probe(std::uint32_t node, bool healthy);
  // New traffic classes (reload): waiting tickets beyond the last band join the last one.
  void set_traffic(TrafficOptions traffic);
  // Draining nodes take no new requests; their in-flight ones finish. kNotFound if unknown.
  Status set_draining(std::string_view name, bool draining);

  // KV events of the engine(s) named `node`: one decoded batch, or a raw msgpack payload
  // (decoded without trust; a malformed one is counted against the node and dropped; false).
  // `restart`: the engine's publisher restarted, so its cache is empty before this batch.
  void apply_kv_events(std::string_view node, const kvcache::KVEventBatch& batch,
                       bool restart = false);
  void apply_kv_events(std::uint32_t node, const kvcache::KVEventBatch& batch,
                       bool restart = false);
  bool apply_kv_payload(std::string_view node, std::span<const std::uint8_t> payload);
  // Batches the live layer lost for this node (subscriber overflow, hand-over queue full).
  void count_kv_events_dropped(std::string_view node, std::uint64_t batches);
  // The other replicas' load on the node named `node` (fleet sync), replacing the last report.
  void report_fleet_load(std::string_view node, FleetLoad load);
  // Another replica placed these blocks on `node` (fleet sync): predicted there, as this core's
  // own placements are, until the engine's events confirm them or the TTL ends.
  void apply_predicted_blocks(std::string_view node, std::span<const std::uint64_t> hashes);
  // The engine's own load report (scraped from its /metrics).
  void report_engine_load(std::string_view node, EngineLoad load);
  void report_engine_load(std::uint32_t node, EngineLoad load);
  PrefixIndexReport prefix_report() const;
  // Decode legs the policy held so far, and of those the ones a bound then placed.
  std::uint64_t decode_holds() const noexcept { return decode_holds_; }
  std::uint64_t decode_hold_timeouts() const noexcept { return decode_hold_timeouts_; }

  std::vector<NodeStatus> nodes() const;
  std::size_t waiting() const noexcept { return queue_.size(); }
  // Whether at least one node of `role` is usable now (up, not draining, circuit not open).
  bool usable(Role role) const;
  const sched::PlacementPolicy& policy() const noexcept { return *policy_; }

 private:
  struct Prefilling {
    std::uint64_t ticket = 0;
    TimePoint until{};
    std::uint64_t tokens = 0;
  };
  struct Node {
    NodeStatus status;
    TimePoint ejected_until{};
    Duration next_ejection{};
    TimePoint last_prefill_done{};
    // The first placement of uncached blocks since the node's last event: the engine owes us
    // events since then (staleness).
    std::optional<TimePoint> owed_events_since;
    std::vector<Prefilling> prefilling;  // aggregated mode: estimated prefills in progress
    std::unordered_set<std::uint64_t> first_tokens;  // aggregated: leases whose prefill ended
  };
  struct Blocked {
    sched::Stage stage;
    std::string_view group;
    bool possible = true;   // any_possible() of the ticket that blocked them
    std::uint8_t band = 0;  // the effective band of the ticket that blocked them
    double share = 1.0;     // the node share it saw: it blocks only tickets with no more
  };
  struct Waiting {
    Ticket ticket;
    TimePoint enqueued{};
    bool held = false;                         // a decode leg the policy has held (counted once)
    WaitCause cause = WaitCause::kNoCapacity;  // why it waits since `cause_since`
    TimePoint cause_since{};
    WaitTimes waited{};
  };

  bool classes() const noexcept { return options_.traffic.bands.size() > 1 || tenants_seen_; }
  void order_queue(TimePoint now);
  FairOrder::Entry fair_entry(const Waiting& waiting, TimePoint now) const;
  std::uint8_t effective_band(const Waiting& waiting, TimePoint now) const;
  Duration timeout_of(const Ticket& ticket) const;
  const BandSpec* band_spec(std::uint8_t band) const;
  Status admit_band(const Ticket& ticket);
  bool evict_for(const Ticket& incoming, TimePoint now);
  std::deque<Waiting>::iterator sheddable_victim(const Ticket& incoming);
  std::deque<Waiting>::iterator share_victim(const Ticket& incoming);
  double node_share(const Ticket& ticket) const;
  Error timeout_error(const Ticket& ticket);
  // Leaves the queue (the caller removes the entry): wait causes closed and reported.
  void leave(Waiting& waiting, TimePoint now);
  static void note_cause(Waiting& waiting, WaitCause cause, TimePoint now);
  bool candidate(const Node& node, const Ticket& ticket) const;
  bool selectable(const Node& node) const;
  bool any_possible(const Ticket& ticket) const;
  void refresh_circuits(TimePoint now);
  void record_failure(Node& node, TimePoint now);
  // Every health change goes through here, so the observer hears of each one.
  void set_health(Node& node, NodeHealth to, HealthCause cause, Duration for_how_long = {});
  void load_changed(const Node& node, std::int64_t tokens, std::int64_t prompt_tokens,
                    std::int32_t running) const;
  bool may_eject(Role role) const;
  enum class Placed { kPlaced, kNoCandidate, kHeld };
  Placed place(Waiting& waiting, TimePoint now, Lease& lease);
  sched::Stage stage_of(const Ticket& ticket) const;
  sched::PlacementRequest request_of(const Waiting& waiting, TimePoint now) const;
  void fill_candidates(const Ticket& ticket);
  bool may_hold_decode(const Waiting& waiting, TimePoint now) const;
  Lease dispatch(Node& node, const Ticket& ticket, std::uint32_t matched, TimePoint now);
  bool prefills(const Ticket& ticket) const;
  bool fill_matches(const Ticket& ticket, TimePoint now);
  void after_placement(Node& node, const Ticket& ticket, TimePoint now);
  void queue_prefill(Node& node, std::uint64_t ticket, std::uint64_t uncached, TimePoint now);
  static void unqueue_prefill(NodeStatus& status, std::uint64_t uncached);
  void settle_prefills(TimePoint now);
  void end_prefill(Node& node, const Lease& lease, Outcome outcome, TimePoint now);
  void learn_prefill(Node& node, const Lease& lease, TimePoint now);
  bool stale(const Node& node, TimePoint now) const;
  double index_time(TimePoint t) const;
  template <class Fn>
  void for_named(std::string_view name, Fn fn);
  Node* find(std::uint32_t id);
  const Node* find(std::uint32_t id) const;
  void forget_removed();
  void reindex();

  const Clock& clock_;
  SchedulerOptions options_;
  std::unique_ptr<sched::PlacementPolicy> policy_;
  std::unique_ptr<sched::PrefixIndex> index_;  // null when disabled
  std::uint64_t lookups_ = 0;
  std::vector<Node> nodes_;
  std::uint32_t next_id_ = 0;
  std::deque<Waiting> queue_;
  std::vector<std::int32_t> slot_of_id_;          // node id → index in nodes_ (-1: gone)
  std::vector<sched::Candidate> candidates_;      // reused per placement
  std::vector<PlacementInput> placement_inputs_;  // for the observer, only when it wants them
  std::uint64_t decode_holds_ = 0;
  std::uint64_t decode_hold_timeouts_ = 0;
  std::size_t decodes_held_now_ = 0;  // decode legs waiting after a policy hold
  // Reused per pass: the policy order of the queue and which entries were decided.
  std::vector<std::pair<double, std::size_t>> order_;
  std::vector<char> finished_;
  std::vector<Blocked> blocked_;  // per pass: stages (and groups) that cannot place now
  // Traffic classes: the fair order's tags, its per-pass entries and order, and tickets shed
  // at submit (answered at the next pass).
  FairOrder fair_;
  bool tenants_seen_ = false;
  std::vector<FairOrder::Entry> fair_entries_;
  std::vector<std::size_t> pass_order_;
  std::vector<std::size_t> band_waiting_;  // waiting tickets per band (configured band)
  std::vector<Decision> shed_;
};

std::string_view health_name(NodeHealth health) noexcept;
std::string_view role_name(Role role) noexcept;

}  // namespace omni::proxy
