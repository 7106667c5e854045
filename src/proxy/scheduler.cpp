#include "omni/proxy/scheduler.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace omni::proxy {

std::string_view health_name(NodeHealth health) noexcept {
  switch (health) {
    case NodeHealth::kUp: return "up";
    case NodeHealth::kDown: return "down";
    case NodeHealth::kEjected: return "ejected";
    case NodeHealth::kTrial: return "trial";
  }
  return "unknown";
}

std::string_view role_name(Role role) noexcept {
  return role == Role::kPrefill ? "prefill" : "decode";
}

Scheduler::Scheduler(const Clock& clock, SchedulerOptions options, std::unique_ptr<Policy> policy)
    : clock_(clock), options_(options), policy_(std::move(policy)) {}

void Scheduler::set_nodes(const std::vector<NodeSpec>& specs) {
  for (Node& node : nodes_) node.status.removed = true;
  for (const NodeSpec& spec : specs) {
    auto known = std::find_if(nodes_.begin(), nodes_.end(), [&](const Node& node) {
      return node.status.spec.name == spec.name && node.status.spec.role == spec.role;
    });
    if (known != nodes_.end()) {
      known->status.removed = false;
      known->status.spec = spec;
      continue;
    }
    Node node;
    node.status.id = next_id_++;
    node.status.spec = spec;
    node.next_ejection = options_.ejection_time;
    nodes_.push_back(std::move(node));
  }
  forget_removed();
}

Status Scheduler::submit(Ticket ticket) {
  if (queue_.size() >= options_.queue_capacity) {
    return make_error(ErrorCode::kResourceExhausted, "the proxy queue is full");
  }
  for (const Waiting& waiting : queue_) {
    if (waiting.ticket.id == ticket.id) {
      return make_error(ErrorCode::kInvalidArgument, "ticket already waiting");
    }
  }
  queue_.push_back({std::move(ticket), clock_.now()});
  return {};
}

std::vector<Decision> Scheduler::schedule() {
  std::vector<Decision> decisions;
  if (queue_.empty()) return decisions;
  const TimePoint now = clock_.now();
  refresh_circuits(now);

  // Policy order, computed once per pass; ties keep arrival order (stable sort).
  std::vector<std::pair<double, std::size_t>> order;
  order.reserve(queue_.size());
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    const Waiting& w = queue_[i];
    const TicketView view{w.ticket.id, w.ticket.role, w.ticket.prompt_tokens, w.ticket.max_tokens,
                          w.enqueued, w.ticket.attempt};
    order.emplace_back(policy_->queue_score(view, now), i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });

  std::vector<bool> finished(queue_.size(), false);
  for (const auto& [score, index] : order) {
    const Waiting& waiting = queue_[index];
    if (!any_possible(waiting.ticket)) {
      decisions.push_back({waiting.ticket.id,
                           make_error(ErrorCode::kUnavailable,
                                      std::string("no ") + std::string(role_name(waiting.ticket.role)) +
                                          " node left to try")});
      finished[index] = true;
    } else if (auto lease = place(waiting, now)) {
      decisions.push_back({waiting.ticket.id, *lease});
      finished[index] = true;
    } else if (now - waiting.enqueued >= options_.queue_timeout) {
      decisions.push_back({waiting.ticket.id,
                           make_error(ErrorCode::kTimeout, "no node was free within the queue timeout")});
      finished[index] = true;
    }
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    if (!finished[i]) queue_[kept++] = std::move(queue_[i]);
  }
  queue_.resize(kept);
  return decisions;
}

std::optional<Lease> Scheduler::place(const Waiting& waiting, TimePoint) {
  const Ticket& ticket = waiting.ticket;
  views_.clear();
  for (const Node& node : nodes_) {
    if (!candidate(node, ticket)) continue;
    views_.push_back({node.status.id, node.status.spec.name, node.status.spec.group,
                      node.status.load, options_.node_limits});
  }
  if (views_.empty()) return std::nullopt;
  const TicketView view{ticket.id, ticket.role, ticket.prompt_tokens, ticket.max_tokens,
                        waiting.enqueued, ticket.attempt};
  const auto chosen = policy_->pick(view, views_);
  if (!chosen || *chosen >= views_.size()) return std::nullopt;
  Node* node = find(views_[*chosen].id);
  const std::uint64_t tokens =
      ticket.role == Role::kPrefill ? ticket.prompt_tokens : ticket.prompt_tokens + ticket.max_tokens;
  node->status.load.outstanding_tokens += tokens;
  node->status.load.running += 1;
  node->status.dispatched += 1;
  return Lease{ticket.id, node->status.id, tokens};
}

void Scheduler::release(const Lease& lease, Outcome outcome) {
  Node* node = find(lease.node);
  if (!node) return;
  NodeLoad& load = node->status.load;
  load.outstanding_tokens -= std::min(load.outstanding_tokens, lease.tokens);
  load.running -= std::min<std::uint32_t>(load.running, 1);
  if (outcome == Outcome::kFailure) {
    record_failure(*node, clock_.now());
  } else if (outcome == Outcome::kSuccess) {
    node->status.consecutive_failures = 0;
    if (node->status.health == NodeHealth::kTrial) {
      node->status.health = NodeHealth::kUp;
      node->next_ejection = options_.ejection_time;
    }
  }
  forget_removed();
}

bool Scheduler::cancel(std::uint64_t ticket) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Waiting& waiting) { return waiting.ticket.id == ticket; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

void Scheduler::report_probe(std::uint32_t id, bool healthy) {
  Node* node = find(id);
  if (!node) return;
  NodeHealth& health = node->status.health;
  if (!healthy) {
    if (health == NodeHealth::kUp || health == NodeHealth::kTrial) health = NodeHealth::kDown;
    return;
  }
  if (health == NodeHealth::kDown) {
    health = NodeHealth::kUp;
    node->status.consecutive_failures = 0;
  } else if (health == NodeHealth::kEjected) {
    health = NodeHealth::kTrial;  // a real request decides whether the circuit closes
  }
}

Status Scheduler::set_draining(std::string_view name, bool draining) {
  bool found = false;
  for (Node& node : nodes_) {
    if (node.status.spec.name != name || node.status.removed) continue;
    node.status.draining = draining;
    found = true;
  }
  if (!found) return make_error(ErrorCode::kNotFound, "no node named " + std::string(name));
  return {};
}

std::vector<NodeStatus> Scheduler::nodes() const {
  std::vector<NodeStatus> out;
  out.reserve(nodes_.size());
  for (const Node& node : nodes_) out.push_back(node.status);
  return out;
}

bool Scheduler::usable(Role role) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& node) {
    return node.status.spec.role == role && selectable(node);
  });
}

bool Scheduler::selectable(const Node& node) const {
  const NodeStatus& s = node.status;
  if (s.removed || s.draining) return false;
  if (s.health == NodeHealth::kDown || s.health == NodeHealth::kEjected) return false;
  // Half-open: one trial request at a time.
  return s.health != NodeHealth::kTrial || s.load.running == 0;
}

bool Scheduler::candidate(const Node& node, const Ticket& ticket) const {
  const NodeStatus& s = node.status;
  if (s.spec.role != ticket.role || !selectable(node)) return false;
  if (!ticket.group.empty() && !s.spec.group.empty() && s.spec.group != ticket.group) return false;
  if (std::find(ticket.tried.begin(), ticket.tried.end(), s.id) != ticket.tried.end()) return false;
  // Under the thresholds now: an idle node takes even a request larger than its limit.
  return s.load.outstanding_tokens < options_.node_limits.outstanding_tokens &&
         s.load.running < options_.node_limits.running;
}

bool Scheduler::any_possible(const Ticket& ticket) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& node) {
    const NodeStatus& s = node.status;
    if (s.spec.role != ticket.role || s.removed) return false;
    if (!ticket.group.empty() && !s.spec.group.empty() && s.spec.group != ticket.group) return false;
    return std::find(ticket.tried.begin(), ticket.tried.end(), s.id) == ticket.tried.end();
  });
}

void Scheduler::refresh_circuits(TimePoint now) {
  for (Node& node : nodes_) {
    if (node.status.health == NodeHealth::kEjected && now >= node.ejected_until) {
      node.status.health = NodeHealth::kTrial;
    }
  }
}

void Scheduler::record_failure(Node& node, TimePoint now) {
  NodeStatus& s = node.status;
  s.failures += 1;
  s.consecutive_failures += 1;
  const bool trial_failed = s.health == NodeHealth::kTrial;
  if (!trial_failed && s.consecutive_failures < options_.failures_to_eject) return;
  if (s.health == NodeHealth::kDown) return;  // already out; the probe brings it back
  s.health = NodeHealth::kEjected;
  node.ejected_until = now + node.next_ejection;
  node.next_ejection = std::min(node.next_ejection * 2, options_.max_ejection_time);
}

Scheduler::Node* Scheduler::find(std::uint32_t id) {
  for (Node& node : nodes_) {
    if (node.status.id == id) return &node;
  }
  return nullptr;
}

void Scheduler::forget_removed() {
  std::erase_if(nodes_, [](const Node& node) {
    return node.status.removed && node.status.load.running == 0;
  });
}

}  // namespace omni::proxy
