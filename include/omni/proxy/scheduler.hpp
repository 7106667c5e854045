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
// Threading: single-threaded; the owner serialises every call (omni-proxy: its scheduler
// thread; the simulator: its event loop).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/proxy/policy.hpp"

namespace omni::proxy {

using namespace std::chrono_literals;

struct NodeSpec {
  std::string name;   // unique; omni-proxy uses the endpoint "host:port"
  Role role = Role::kPrefill;
  std::string group;  // PD group; empty: any
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

struct SchedulerOptions {
  std::size_t queue_capacity = 1024;       // waiting tickets, both roles together
  Duration queue_timeout = 30s;            // longest wait for a node
  NodeLoad node_limits{1'000'000, 256};    // thresholds per node
  std::uint32_t failures_to_eject = 3;     // consecutive failures that open the circuit
  Duration ejection_time = 5s;             // first cool-down; doubles per re-ejection
  Duration max_ejection_time = 60s;
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
};

// Load taken by a dispatched ticket, handed back with release().
struct Lease {
  std::uint64_t ticket = 0;
  std::uint32_t node = 0;
  std::uint64_t tokens = 0;
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
};

class Scheduler {
 public:
  Scheduler(const Clock& clock, SchedulerOptions options, std::unique_ptr<Policy> policy);

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
  // Returns the lease's load and records the outcome for the node's health.
  void release(const Lease& lease, Outcome outcome);
  // Drops a waiting ticket (the client went away). Returns whether it was waiting.
  bool cancel(std::uint64_t ticket);
  // Active health checks: a failed probe takes a node down; a good one brings it up (and
  // closes an open circuit).
  void report_probe(std::uint32_t node, bool healthy);
  // Draining nodes take no new requests; their in-flight ones finish. kNotFound if unknown.
  Status set_draining(std::string_view name, bool draining);

  std::vector<NodeStatus> nodes() const;
  std::size_t waiting() const noexcept { return queue_.size(); }
  // Whether at least one node of `role` is usable now (up, not draining, circuit not open).
  bool usable(Role role) const;
  const Policy& policy() const noexcept { return *policy_; }

 private:
  struct Node {
    NodeStatus status;
    TimePoint ejected_until{};
    Duration next_ejection{};
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
  Node* find(std::uint32_t id);
  void forget_removed();

  const Clock& clock_;
  SchedulerOptions options_;
  std::unique_ptr<Policy> policy_;
  std::vector<Node> nodes_;
  std::uint32_t next_id_ = 0;
  std::deque<Waiting> queue_;
  std::vector<NodeView> views_;  // reused per placement
};

std::string_view health_name(NodeHealth health) noexcept;
std::string_view role_name(Role role) noexcept;

}  // namespace omni::proxy
