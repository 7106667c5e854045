#include "dispatcher.hpp"

#include <chrono>
#include <utility>

namespace omni::proxy {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

Dispatcher::Dispatcher(const Clock& clock, SchedulerOptions options, std::unique_ptr<Policy> policy,
                       Duration tick, DispatcherMetrics metrics)
    : scheduler_(clock, options, std::move(policy)), tick_(tick), metrics_(metrics) {}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::start() {
  if (thread_.joinable()) return;
  publish();
  thread_ = std::thread([this] { run(); });
}

void Dispatcher::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  wake();
  thread_.join();
}

Status Dispatcher::submit(Ticket ticket, DecisionFn on_decision) {
  Command command;
  command.kind = Kind::kSubmit;
  command.ticket = std::move(ticket);
  command.on_decision = std::move(on_decision);
  command.pushed = std::chrono::steady_clock::now();
  if (stopping_.load() || !commands_.try_push(std::move(command))) {
    return make_error(ErrorCode::kResourceExhausted, "the scheduler's hand-over queue is full");
  }
  wake();
  return {};
}

void Dispatcher::release(const Lease& lease, Outcome outcome) {
  Command command;
  command.kind = Kind::kRelease;
  command.lease = lease;
  command.outcome = outcome;
  push(std::move(command));
}

void Dispatcher::cancel(std::uint64_t ticket) {
  Command command;
  command.kind = Kind::kCancel;
  command.id = ticket;
  push(std::move(command));
}

void Dispatcher::probe(std::uint32_t node, bool healthy) {
  Command command;
  command.kind = Kind::kProbe;
  command.id = node;
  command.flag = healthy;
  push(std::move(command));
}

void Dispatcher::drain(std::string node, bool draining) {
  Command command;
  command.kind = Kind::kDrain;
  command.name = std::move(node);
  command.flag = draining;
  push(std::move(command));
}

void Dispatcher::set_nodes(std::vector<NodeSpec> nodes) {
  Command command;
  command.kind = Kind::kSetNodes;
  command.nodes = std::move(nodes);
  push(std::move(command));
}

DispatcherSnapshot Dispatcher::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

void Dispatcher::push(Command command) {
  // Releases and the like are bounded by the requests in flight, so the queue (64k) fills only
  // in a pathological burst; waiting for room keeps load accounting exact.
  while (!commands_.try_push(std::move(command))) {
    if (!thread_.joinable()) return;
    std::this_thread::yield();
  }
  wake();
}

void Dispatcher::wake() {
  // Only the producer that flips the flag releases, so a sleep gets at most one token.
  // The fence pairs with the scheduler's: either it sees our push, or we see it sleeping.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load() && sleeping_.exchange(false)) wake_.release();
}

void Dispatcher::run() {
  while (!stopping_.load()) {
    const bool changed = drain_commands();
    if (!pending_.empty() || changed) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<Decision> decisions = scheduler_.schedule();
      if (metrics_.pass_duration) metrics_.pass_duration->observe(seconds_since(start));
      deliver(decisions);
    }
    if (changed) publish();
    // Sleep one tick unless a command arrives; the flag keeps producers from waking a running
    // thread (a wake is a syscall). A command pushed just before the flag was raised is found
    // by the re-check; a token left by a producer that flipped the flag after a timed-out
    // wait only shortens the next sleep.
    sleeping_.store(true);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (commands_.looks_empty() || !sleeping_.exchange(false)) (void)wake_.try_acquire_for(tick_);
    sleeping_.store(false);
  }
  drain_commands();
  for (auto& [id, pending] : pending_) {
    pending.on_decision(make_error(ErrorCode::kCancelled, "the proxy is shutting down"));
  }
  pending_.clear();
}

bool Dispatcher::drain_commands() {
  bool any = false;
  while (auto command = commands_.try_pop()) {
    apply(*command);
    any = true;
  }
  return any;
}

void Dispatcher::apply(Command& command) {
  switch (command.kind) {
    case Kind::kSubmit: {
      const std::uint64_t id = command.ticket.id;
      if (Status status = scheduler_.submit(std::move(command.ticket)); !status) {
        command.on_decision(std::move(status).error());
        return;
      }
      pending_[id] = Pending{std::move(command.on_decision), command.pushed};
      return;
    }
    case Kind::kRelease: scheduler_.release(command.lease, command.outcome); return;
    case Kind::kCancel:
      if (scheduler_.cancel(command.id)) {
        auto it = pending_.find(command.id);
        if (it != pending_.end()) {
          it->second.on_decision(make_error(ErrorCode::kCancelled, "cancelled"));
          pending_.erase(it);
        }
      }
      return;
    case Kind::kProbe: scheduler_.report_probe(static_cast<std::uint32_t>(command.id), command.flag); return;
    case Kind::kDrain: (void)scheduler_.set_draining(command.name, command.flag); return;
    case Kind::kSetNodes: scheduler_.set_nodes(command.nodes); return;
    case Kind::kNone: return;
  }
}

void Dispatcher::deliver(std::vector<Decision>& decisions) {
  if (decisions.empty()) return;
  const std::vector<NodeStatus> nodes = scheduler_.nodes();
  for (Decision& decision : decisions) {
    auto it = pending_.find(decision.ticket);
    if (it == pending_.end()) continue;
    Pending pending = std::move(it->second);
    pending_.erase(it);
    if (metrics_.decision_latency) metrics_.decision_latency->observe(seconds_since(pending.pushed));
    if (!decision.lease) {
      pending.on_decision(std::move(decision.lease).error());
      continue;
    }
    Placement placement{*decision.lease, {}, {}};
    for (const NodeStatus& node : nodes) {
      if (node.id == placement.lease.node) {
        placement.node = node.spec.name;
        placement.group = node.spec.group;
      }
    }
    pending.on_decision(std::move(placement));
  }
  publish();
}

void Dispatcher::publish() {
  DispatcherSnapshot snapshot;
  snapshot.nodes = scheduler_.nodes();
  snapshot.waiting = scheduler_.waiting();
  snapshot.prefill_usable = scheduler_.usable(Role::kPrefill);
  snapshot.decode_usable = scheduler_.usable(Role::kDecode);
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(snapshot);
}

}  // namespace omni::proxy
