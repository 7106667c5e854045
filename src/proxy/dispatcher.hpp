// Dispatcher: the master of omni-proxy's master/worker split. One thread owns the Scheduler
// and makes every placement decision from its single view of queues and node loads; the I/O
// workers hand it commands through one bounded lock-free queue and get decisions back as
// callbacks (which post to the worker's own executor).
//
//   worker threads ──try_push(Command)──▶ BoundedQueue ──▶ scheduler thread
//                                                            │ apply commands, schedule()
//   worker executor ◀──post(decision)───────────────────────┘ every tick or when woken
//
// Threading: every public member is safe from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <unordered_map>
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
};
// Called on the scheduler thread, exactly once per submitted ticket (also at stop()).
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
  Dispatcher(const Clock& clock, SchedulerOptions options, std::unique_ptr<Policy> policy,
             Duration tick, DispatcherMetrics metrics = {});
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void start();
  // Joins the thread; undecided tickets get kCancelled.
  void stop();

  // kResourceExhausted when the hand-over queue is full (the caller answers 429).
  Status submit(Ticket ticket, DecisionFn on_decision);
  void release(const Lease& lease, Outcome outcome);
  void cancel(std::uint64_t ticket);
  void probe(std::uint32_t node, bool healthy);
  void drain(std::string node, bool draining);
  void set_nodes(std::vector<NodeSpec> nodes);

  // A copy of the last published state (refreshed after every pass that changed something).
  DispatcherSnapshot snapshot() const;

 private:
  enum class Kind { kNone, kSubmit, kRelease, kCancel, kProbe, kDrain, kSetNodes };
  struct Command {
    Kind kind = Kind::kNone;
    Ticket ticket;
    DecisionFn on_decision;
    Lease lease;
    Outcome outcome = Outcome::kSuccess;
    std::uint64_t id = 0;
    bool flag = false;
    std::string name;
    std::vector<NodeSpec> nodes;
    std::chrono::steady_clock::time_point pushed{};
  };
  struct Pending {
    DecisionFn on_decision;
    std::chrono::steady_clock::time_point pushed{};
  };

  void push(Command command);  // for commands that must not be lost: waits for room
  void wake();
  void run();
  bool drain_commands();
  void apply(Command& command);
  void deliver(std::vector<Decision>& decisions);
  void publish();

  Scheduler scheduler_;
  Duration tick_;
  DispatcherMetrics metrics_;
  detail::BoundedQueue<Command> commands_{1 << 16};
  std::unordered_map<std::uint64_t, Pending> pending_;  // scheduler thread only

  std::atomic<bool> stopping_{false};
  // The scheduler thread sleeps on a semaphore, never on a mutex that producers contend for:
  // a producer that finds it sleeping flips the flag and releases once.
  std::atomic<bool> sleeping_{false};
  std::counting_semaphore<1 << 20> wake_{0};
  std::thread thread_;

  mutable std::mutex snapshot_mu_;
  DispatcherSnapshot snapshot_;
};

}  // namespace omni::proxy
