// Dispatcher: the master of omni-proxy's master/worker split. Every placement decision is made
// by one master from one consistent view of queues and node loads (the Scheduler), whatever
// I/O worker the request arrived on. The master is a *role*, not a thread (flat combining):
//
//   worker: try_push(Command) ──▶ BoundedQueue ──┐
//           try to take the master role ─────────┤ got it: drain every queued command (its own
//                                                │   and other workers'), schedule(), deliver;
//                                                │   release the role, re-check the queue
//                                                │ busy: the holder re-checks the queue after
//                                                │   releasing the role, so nothing is stranded
//   background thread: every tick (queue timeouts, circuits, aging) takes the same role
//
// In the common case (an idle dispatcher, a free node) a submit is decided before submit()
// returns, on the submitting thread, with no thread hop and no wake-up syscall: the decision
// callback runs inline. Decisions for other workers' tickets run their callbacks on whichever
// thread is master; the gateway's callback posts them to the owning worker's executor.
// Callbacks run in the master context: they must not block, and may call any member (a
// command issued from a callback is queued and applied before the master role is released).
//
// Threading: every public member is safe from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "bounded_queue.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {

// Where a ticket was placed: its lease and the chosen node's name and PD group.
struct Placement {
  Lease lease;
  std::string node;
  std::string group;
  WaitTimes waited{};  // its time in the queue, by cause
};
// Called in the master context (any thread: the submitter's, another submitter's, or the
// background thread), exactly once per accepted ticket (kCancelled at stop()).
using DecisionFn = std::function<void(Result<Placement>)>;

struct DispatcherSnapshot {
  std::vector<NodeStatus> nodes;
  std::size_t waiting = 0;
  bool prefill_usable = false;
  bool decode_usable = false;
};

struct DispatcherMetrics {
  metrics::Histogram* decision_latency = nullptr;  // submit → decision delivered
  metrics::Histogram* pass_duration = nullptr;     // one schedule() call
};

class Dispatcher {
 public:
  Dispatcher(const Clock& clock, SchedulerOptions options,
             std::unique_ptr<sched::PlacementPolicy> policy, Duration tick,
             DispatcherMetrics metrics = {});
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void start();
  // Joins the background thread; undecided tickets (and any submitted later) get kCancelled.
  void stop();

  // kResourceExhausted when the hand-over queue is full (the caller answers 429). When the
  // master role is free, the ticket is scheduled (and, if a node is free, decided: the
  // callback has run) before this returns.
  Status submit(Ticket ticket, DecisionFn on_decision);
  // Runs `fn` in the master context (serialised with every decision), soon. false when the
  // command queue is full (the caller counts a drop). Safe from any thread.
  bool post(std::function<void(Scheduler&)> fn);
  void release(const Lease& lease, Outcome outcome);
  // Aggregated mode: a request's first token came back (Scheduler::first_token). Advisory: a
  // full command queue drops it (the scheduler's estimate stands in).
  void first_token(const Lease& lease);
  void cancel(std::uint64_t ticket);
  void probe(std::uint32_t node, bool healthy);
  void drain(std::string node, bool draining);
  void set_nodes(std::vector<NodeSpec> nodes);

  // A copy of the last published state: refreshed by the pass that applied a reload, drain or
  // probe, and otherwise at most one tick after a pass that changed loads or the queue
  // (copying every node on each decision would cost the hot path an allocation per node).
  DispatcherSnapshot snapshot() const;

 private:
  // What workers hand the master. A variant, so that the queue moves only the command at hand
  // (a submit's ticket, or a release's lease), not every field any command might need.
  struct SubmitCommand {
    Ticket ticket;
    DecisionFn on_decision;
    std::chrono::steady_clock::time_point pushed{};
  };
  struct ReleaseCommand {
    Lease lease;
    Outcome outcome = Outcome::kSuccess;
  };
  struct CancelCommand {
    std::uint64_t ticket = 0;
  };
  struct ProbeCommand {
    std::uint32_t node = 0;
    bool healthy = false;
  };
  struct DrainCommand {
    std::string node;
    bool draining = false;
  };
  struct SetNodesCommand {
    std::vector<NodeSpec> nodes;
  };
  struct RunCommand {
    std::function<void(Scheduler&)> fn;
  };
  using Command = std::variant<std::monostate, SubmitCommand, ReleaseCommand, CancelCommand,
                               ProbeCommand, DrainCommand, SetNodesCommand, RunCommand>;
  struct Pending {
    DecisionFn on_decision;
    std::chrono::steady_clock::time_point pushed{};
  };

  struct NodeName {
    std::string name;
    std::string group;
  };

  void push(Command command);  // for commands that must not be lost: waits for room
  // The combining loop: while commands are queued and the master role is free, take it and
  // run a pass. Returns without waiting when another thread holds the role.
  void combine();
  bool try_become_master() noexcept;
  void stop_being_master() noexcept;
  void pass(bool tick);  // master only
  void run();            // the background thread
  bool drain_commands();
  void apply(Command& command);
  void apply_submit(SubmitCommand& command);
  void deliver(std::vector<Decision>& decisions);
  void cancel_all_pending();
  void refresh_names();
  void publish();

  // ---- master context only (whoever holds master_) ----
  Scheduler scheduler_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::vector<Decision> decisions_;                    // reused by every pass
  std::unordered_map<std::uint32_t, NodeName> names_;  // node id → name and group
  bool dirty_ = false;        // loads or queue changed since the last publish
  bool publish_now_ = false;  // a reload, drain or probe: publish at the end of this pass

  Duration tick_;
  DispatcherMetrics metrics_;
  detail::BoundedQueue<Command> commands_{1 << 16};
  // The master role. An atomic flag rather than a mutex: only try-lock is ever used, and the
  // combining loop needs its release and the queue re-check ordered (seq_cst), see combine().
  std::atomic<bool> master_{false};

  // Set by each pass: nothing waits and nothing is left to publish. The tick thread then
  // sleeps kIdleTicks ticks instead of one (an idle proxy need not wake 1,000 times a second).
  std::atomic<bool> idle_{true};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};  // after stop(): every command is answered by cancelling
  std::thread thread_;

  mutable std::mutex snapshot_mu_;
  DispatcherSnapshot snapshot_;
};

}  // namespace omni::proxy
