#include "dispatcher.hpp"

#include <chrono>
#include <utility>

namespace omni::proxy {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The dispatcher whose master role this thread holds, if any: a command issued from a decision
// callback must not wait for a role its own thread holds.
thread_local const void* t_master_of = nullptr;

// Ticks in a row that may find the master role busy before the tick thread waits for it.
constexpr int kTickMissesBeforeWaiting = 8;
// An idle dispatcher ticks this many times less often. Nothing depends on an idle tick but
// stop() and a snapshot already clean; the first pass with work makes it tick fully again.
constexpr int kIdleTicks = 10;
}  // namespace

Dispatcher::Dispatcher(const Clock& clock, SchedulerOptions options,
                       std::unique_ptr<sched::PlacementPolicy> policy, Duration tick,
                       DispatcherMetrics metrics)
    : scheduler_(clock, options, std::move(policy)), tick_(tick), metrics_(metrics) {}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::start() {
  if (thread_.joinable() || stopping_.load()) return;
  while (!try_become_master()) std::this_thread::yield();
  publish();
  stop_being_master();
  thread_ = std::thread([this] { run(); });
}

void Dispatcher::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();  // it notices within a tick
  // A combiner on an I/O thread may hold the role: wait for its pass to end, then cancel
  // whatever is left. A submit racing with this is cancelled by its own combining pass.
  while (!try_become_master()) std::this_thread::yield();
  pass(false);
  stop_being_master();
  combine();
}

Status Dispatcher::submit(Ticket ticket, DecisionFn on_decision) {
  if (stopping_.load()) return make_error(ErrorCode::kCancelled, "the proxy is shutting down");
  Command command(std::in_place_type<SubmitCommand>, std::move(ticket), std::move(on_decision),
                  std::chrono::steady_clock::now());
  if (!commands_.try_push(std::move(command))) {
    return make_error(ErrorCode::kResourceExhausted, "the scheduler's hand-over queue is full");
  }
  combine();
  return {};
}

bool Dispatcher::post(std::function<void(Scheduler&)> fn) {
  Command command(std::in_place_type<RunCommand>, std::move(fn));
  if (!commands_.try_push(std::move(command))) return false;
  combine();
  return true;
}

void Dispatcher::first_token(const Lease& lease) {
  (void)post([lease](Scheduler& s) { s.first_token(lease); });
}

void Dispatcher::release(const Lease& lease, Outcome outcome) {
  push(Command(std::in_place_type<ReleaseCommand>, lease, outcome));
}

void Dispatcher::cancel(std::uint64_t ticket) {
  push(Command(std::in_place_type<CancelCommand>, ticket));
}

void Dispatcher::probe(std::uint32_t node, bool healthy) {
  push(Command(std::in_place_type<ProbeCommand>, node, healthy));
}

void Dispatcher::drain(std::string node, bool draining) {
  push(Command(std::in_place_type<DrainCommand>, std::move(node), draining));
}

void Dispatcher::set_nodes(std::vector<NodeSpec> nodes) {
  push(Command(std::in_place_type<SetNodesCommand>, std::move(nodes)));
}

DispatcherSnapshot Dispatcher::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

void Dispatcher::push(Command command) {
  // Releases and the like are bounded by the requests in flight, so the queue (64k) fills only
  // in a pathological burst; making room (by combining) keeps load accounting exact.
  while (!commands_.try_push(std::move(command))) {
    if (t_master_of == this) {
      apply(command);  // a callback of our own pass: the queue cannot drain under us
      return;
    }
    if (try_become_master()) {
      pass(false);
      stop_being_master();
    } else {
      std::this_thread::yield();
    }
  }
  combine();
}

bool Dispatcher::try_become_master() noexcept {
  if (master_.load(std::memory_order_seq_cst) ||
      master_.exchange(true, std::memory_order_seq_cst)) {
    return false;
  }
  t_master_of = this;
  return true;
}

void Dispatcher::stop_being_master() noexcept {
  t_master_of = nullptr;
  master_.store(false, std::memory_order_seq_cst);
}

void Dispatcher::combine() {
  // No lost commands: a pusher whose try fails leaves its command to the holder, and the
  // holder looks at the queue again after giving the role up. The two fences (here, after the
  // push, and after the release below) order "push; look at the role" against "release the
  // role; look at the queue": at least one side sees the other.
  if (t_master_of == this) return;  // issued from a callback: our own loop picks it up
  std::atomic_thread_fence(std::memory_order_seq_cst);
  while (!commands_.looks_empty()) {
    if (!try_become_master()) return;
    pass(false);
    stop_being_master();
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

void Dispatcher::pass(bool tick) {
  const bool changed = drain_commands();
  if (stopping_.load()) {
    cancel_all_pending();
    publish();
    return;
  }
  // Nothing waiting, nothing to place: a pass that only applied releases or probes is not
  // timed (scheduler_pass_seconds measures placement work, not bookkeeping).
  if ((changed || tick) && !pending_.empty()) {
    const auto start = std::chrono::steady_clock::now();
    decisions_.clear();
    scheduler_.schedule(decisions_);
    if (metrics_.pass_duration) metrics_.pass_duration->observe(seconds_since(start));
    deliver(decisions_);  // callbacks never start a pass of their own (combine() checks)
    // A decision callback may have queued commands (a release of an abandoned lease); they
    // are applied by the combining loop's next pass.
  }
  dirty_ = dirty_ || changed;
  if (publish_now_ || (tick && dirty_)) publish();
  idle_.store(pending_.empty() && !dirty_, std::memory_order_relaxed);
}

void Dispatcher::run() {
  int missed = 0;
  while (!stopping_.load()) {
    // A plain sleep: a semaphore's timed wait spins with sched_yield first (libstdc++), which
    // on a shared core hands the CPU back and forth with the I/O thread every tick.
    std::this_thread::sleep_for(idle_.load(std::memory_order_relaxed) ? tick_ * kIdleTicks : tick_);
    if (stopping_.load()) break;
    // Ticks expire queue timeouts, re-open circuits and refresh the snapshot. When a combiner
    // holds the role, the tick moves to the next period: spinning for the role (sched_yield)
    // would steal the core from the very I/O thread that holds it. Only after many misses in
    // a row does the tick wait for the role, so that its work is never postponed for long.
    if (!try_become_master()) {
      if (++missed < kTickMissesBeforeWaiting) continue;
      while (!stopping_.load() && !try_become_master()) std::this_thread::yield();
      if (stopping_.load()) break;
    }
    missed = 0;
    pass(true);
    stop_being_master();
    combine();
  }
}

bool Dispatcher::drain_commands() {
  bool any = false;
  while (auto command = commands_.try_pop()) {
    apply(*command);
    any = true;
  }
  return any;
}

void Dispatcher::apply_submit(SubmitCommand& command) {
  const std::uint64_t id = command.ticket.id;
  if (stopping_.load()) {
    command.on_decision(make_error(ErrorCode::kCancelled, "the proxy is shutting down"));
    return;
  }
  if (Status status = scheduler_.submit(std::move(command.ticket)); !status) {
    command.on_decision(std::move(status).error());
    return;
  }
  pending_[id] = Pending{std::move(command.on_decision), command.pushed};
}

void Dispatcher::apply(Command& command) {
  if (auto* submit = std::get_if<SubmitCommand>(&command)) {
    apply_submit(*submit);
  } else if (auto* release = std::get_if<ReleaseCommand>(&command)) {
    scheduler_.release(release->lease, release->outcome);
  } else if (auto* cancel = std::get_if<CancelCommand>(&command)) {
    if (scheduler_.cancel(cancel->ticket)) {
      auto it = pending_.find(cancel->ticket);
      if (it != pending_.end()) {
        DecisionFn on_decision = std::move(it->second.on_decision);
        pending_.erase(it);
        on_decision(make_error(ErrorCode::kCancelled, "cancelled"));
      }
    }
  } else if (auto* probe = std::get_if<ProbeCommand>(&command)) {
    scheduler_.report_probe(probe->node, probe->healthy);
    publish_now_ = true;
  } else if (auto* drain = std::get_if<DrainCommand>(&command)) {
    (void)scheduler_.set_draining(drain->node, drain->draining);
    publish_now_ = true;
  } else if (auto* set = std::get_if<SetNodesCommand>(&command)) {
    scheduler_.set_nodes(set->nodes);
    refresh_names();
    publish_now_ = true;
  } else if (auto* run = std::get_if<RunCommand>(&command)) {
    if (run->fn) run->fn(scheduler_);
    refresh_names();  // the function may have changed the node set
    publish_now_ = true;
  }
}

void Dispatcher::deliver(std::vector<Decision>& decisions) {
  for (Decision& decision : decisions) {
    auto it = pending_.find(decision.ticket);
    if (it == pending_.end()) continue;
    Pending pending = std::move(it->second);
    pending_.erase(it);
    if (metrics_.decision_latency)
      metrics_.decision_latency->observe(seconds_since(pending.pushed));
    if (!decision.lease) {
      pending.on_decision(std::move(decision.lease).error());
      continue;
    }
    Placement placement{*decision.lease, {}, {}, decision.waited};
    auto name = names_.find(placement.lease.node);
    if (name == names_.end()) {
      refresh_names();
      name = names_.find(placement.lease.node);
    }
    if (name != names_.end()) {
      placement.node = name->second.name;
      placement.group = name->second.group;
    }
    pending.on_decision(std::move(placement));
  }
  if (!decisions.empty()) dirty_ = true;
}

void Dispatcher::cancel_all_pending() {
  // Moved out first: a callback may issue commands, which must not touch the map we walk.
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, entry] : pending) {
    (void)scheduler_.cancel(id);
    entry.on_decision(make_error(ErrorCode::kCancelled, "the proxy is shutting down"));
  }
}

void Dispatcher::refresh_names() {
  names_.clear();
  for (const NodeStatus& node : scheduler_.nodes())
    names_[node.id] = {node.spec.name, node.spec.group};
}

void Dispatcher::publish() {
  DispatcherSnapshot snapshot;
  snapshot.nodes = scheduler_.nodes();
  snapshot.waiting = scheduler_.waiting();
  snapshot.prefill_usable = scheduler_.usable(Role::kPrefill);
  snapshot.decode_usable = scheduler_.usable(Role::kDecode);
  dirty_ = false;
  publish_now_ = false;
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(snapshot);
}

}  // namespace omni::proxy
