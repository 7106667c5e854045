// Scheduler: the pure core of omni-proxy's placement. No sockets, no threads, no wall clock:
// time comes from the injected Clock, so the cluster simulator can run it unchanged.
//
//   submit(ticket) ──▶ bounded wait queue ──schedule()──▶ Decision{ticket, node} ─▶ I/O layer
//        │ full: kResourceExhausted (429)      │ ordered by Policy::queue_score (aging)
//        │                                     │ waited past queue_timeout: Decision{error}
//   release(lease, outcome) ◀───────────────── the leg ended: load returned, health updated
//
// Load is counted when a request is dispatched (not when an engine reports it) and returned
// on release. A node is a candidate when it is up (active probes), its circuit is not open
// (passive: consecutive failures eject it for a cool-down, then one trial request decides),
// it is not draining or removed, the ticket has not tried it, its PD group matches, and it is
// under both thresholds. When no node is a candidate the ticket waits: admission control.
//
// Prefix index (optional, SchedulerOptions::prefix.enabled): the Scheduler owns a
// sched::PrefixIndex keyed by node id. Fed exactly by the engines' KV events
// (apply_kv_events / apply_kv_payload, handed over by the live layer) and approximately by
// inserting a prefill (or aggregated) ticket's block hashes on the chosen node with a short TTL.
// When the policy uses prefix matches, every candidate's NodeView::matched_tokens is looked up.
// A node with an event stream that stays silent past `stale_after` although it was sent
// uncached work is stale: it attracts nothing by its cache until its events resume.
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
#include <utility>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/kvcache/kv_events.hpp"
#include "omni/proxy/policy.hpp"
#include "omni/sched/prefix_index.hpp"

namespace omni::proxy {

using namespace std::chrono_literals;

struct NodeSpec {
  std::string name;   // unique; omni-proxy uses the endpoint "host:port"
  Role role = Role::kPrefill;
  std::string group;  // PD group; empty: any
  bool kv_events = false;  // the engine publishes KV events to the proxy (staleness applies)
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

// What the Scheduler reports about its prefix index, as it happens (the live layer turns
// this into metrics). Called on the Scheduler's thread; must not call back into it.
class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // A placement looked the prompt up: the chosen node's match, in tokens.
  virtual void on_prefix_lookup(std::uint32_t matched_tokens) = 0;
};

struct SchedulerOptions {
  std::size_t queue_capacity = 1024;       // waiting tickets, both roles together
  Duration queue_timeout = 30s;            // longest wait for a node
  NodeLoad node_limits{1'000'000, 256};    // thresholds per node
  std::uint32_t failures_to_eject = 3;     // consecutive failures that open the circuit
  Duration ejection_time = 5s;             // first cool-down; doubles per re-ejection
  Duration max_ejection_time = 60s;
  bool aggregated = false;                 // one engine serves whole requests (decode pool)
  // Whether releasing a prefill lease means its prefill just finished (sequential PD). In
  // parallel PD the prefill lease is held until the decode ends: no speed is learned then.
  bool prefill_ends_at_release = true;
  // Aggregated mode: the proxy does not see a request's first token, so its uncached prompt
  // counts as queued prefill work for uncached / this speed, or until its release.
  double aggregated_prefill_tokens_per_second = 8000;
  std::uint32_t block_size = 16;           // the engines' KV block size, tokens
  struct Prefix {
    bool enabled = true;                   // own a prefix index
    Duration predicted_ttl = 2s;           // lifetime of a placement's approximate insert
    Duration stale_after = 10s;            // event silence (with uncached work sent) → stale
    std::size_t max_entries = std::size_t{1} << 22;  // (block, node) pairs
  } prefix;
  SchedulerObserver* observer = nullptr;   // not owned; outlives the Scheduler
};

// The prefix index as a whole, for metrics.
struct PrefixIndexReport {
  bool enabled = false;
  sched::PrefixIndexStats stats;
  std::uint64_t lookups = 0;
  std::uint32_t stale_nodes = 0;
};

enum class Outcome {
  kSuccess,
  kFailure,    // the node answered wrongly or the connection broke: counts against it
  kNeutral,    // the client went away or cancelled: says nothing about the node
};

struct Ticket {
  std::uint64_t id = 0;  // unique among live tickets
  Role role = Role::kPrefill;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t max_tokens = 0;
  std::string group;                   // decode after prefill: stay in this PD group
  std::vector<std::uint32_t> tried;    // nodes not to use again ("already tried")
  std::uint32_t attempt = 0;
  // The prompt's block hashes in KV-event form (kvcache::event_int), as the engine will
  // publish them; empty when the proxy could not compute them (no prefix matching then).
  std::vector<std::uint64_t> block_hashes;
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
};

enum class NodeHealth { kUp, kDown, kEjected, kTrial };

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
  std::uint64_t kv_events_applied = 0;  // event batches applied to the prefix index
  std::uint64_t kv_events_dropped = 0;  // malformed or lost batches
  bool kv_stale = false;
};

class Scheduler {
 public:
  Scheduler(const Clock& clock, SchedulerOptions options, std::unique_ptr<Policy> policy);
  ~Scheduler();

  // Replaces the node set (reload): nodes with a known name keep their id, load and health;
  // new names get new ids; missing ones become removed (never chosen again, forgotten once
  // their load is released). In-flight leases stay valid.
  void set_nodes(const std::vector<NodeSpec>& nodes);
  // kResourceExhausted when the queue is full; kInvalidArgument for a duplicate id.
  Status submit(Ticket ticket);
  // Places what can be placed, in policy order; expires tickets that waited too long.
  // A ticket whose role has no node at all (none configured, or every one tried) fails at
  // once with kUnavailable rather than waiting for nothing.
  std::vector<Decision> schedule();
  // The same, appending to `out`: a caller that keeps the vector allocates nothing per pass.
  void schedule(std::vector<Decision>& out);
  // Returns the lease's load and records the outcome for the node's health.
  void release(const Lease& lease, Outcome outcome);
  // Drops a waiting ticket (the client went away). Returns whether it was waiting.
  bool cancel(std::uint64_t ticket);
  // Active health checks: a failed probe takes a node down; a good one brings it up (and
  // closes an open circuit).
  void report_probe(std::uint32_t node, bool healthy);
  // Draining nodes take no new requests; their in-flight ones finish. kNotFound if unknown.
  Status set_draining(std::string_view name, bool draining);

  // KV events of the engine(s) named `node`: one decoded batch, or a raw msgpack payload
  // (decoded without trust; a malformed one is counted against the node and dropped; false).
  // `restart`: the engine's publisher restarted, so its cache is empty before this batch.
  void apply_kv_events(std::string_view node, const kvcache::KVEventBatch& batch, bool restart = false);
  bool apply_kv_payload(std::string_view node, std::span<const std::uint8_t> payload);
  // Batches the live layer lost for this node (subscriber overflow, hand-over queue full).
  void count_kv_events_dropped(std::string_view node, std::uint64_t batches);
  // The engine's own load report (scraped from its /metrics).
  void report_engine_load(std::string_view node, EngineLoad load);
  PrefixIndexReport prefix_report() const;

  std::vector<NodeStatus> nodes() const;
  std::size_t waiting() const noexcept { return queue_.size(); }
  // Whether at least one node of `role` is usable now (up, not draining, circuit not open).
  bool usable(Role role) const;
  const Policy& policy() const noexcept { return *policy_; }

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
  };
  struct Waiting {
    Ticket ticket;
    TimePoint enqueued{};
  };

  bool candidate(const Node& node, const Ticket& ticket) const;
  bool selectable(const Node& node) const;
  bool any_possible(const Ticket& ticket) const;
  void refresh_circuits(TimePoint now);
  void record_failure(Node& node, TimePoint now);
  std::optional<Lease> place(const Waiting& waiting, TimePoint now);
  TicketView view_of(const Waiting& waiting) const;
  bool prefills(const Ticket& ticket) const;
  bool fill_matches(const Ticket& ticket, TimePoint now);
  void after_placement(Node& node, const Ticket& ticket, TimePoint now);
  void queue_prefill(Node& node, std::uint64_t ticket, std::uint64_t uncached, TimePoint now);
  static void unqueue_prefill(NodeStatus& status, std::uint64_t uncached);
  void settle_prefills(TimePoint now);
  void end_prefill(Node& node, const Lease& lease, Outcome outcome, TimePoint now);
  bool stale(const Node& node, TimePoint now) const;
  double index_time(TimePoint t) const;
  template <class Fn>
  void for_named(std::string_view name, Fn fn);
  Node* find(std::uint32_t id);
  void forget_removed();

  const Clock& clock_;
  SchedulerOptions options_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<sched::PrefixIndex> index_;  // null when disabled
  std::uint64_t lookups_ = 0;
  std::vector<Node> nodes_;
  std::uint32_t next_id_ = 0;
  std::deque<Waiting> queue_;
  std::vector<NodeView> views_;  // reused per placement
  // Reused per pass: the policy order of the queue and which entries were decided.
  std::vector<std::pair<double, std::size_t>> order_;
  std::vector<char> finished_;
};

std::string_view health_name(NodeHealth health) noexcept;
std::string_view role_name(Role role) noexcept;

}  // namespace omni::proxy
