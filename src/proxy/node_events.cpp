#include "node_events.hpp"

#include <fmt/format.h>

#include "omni/log/log.hpp"
#include "proxy_metrics.hpp"

namespace omni::proxy {
namespace {

std::string_view role_word(Role role) { return role == Role::kPrefill ? "prefill" : "decode"; }

std::string seconds_text(Duration d) {
  return fmt::format("{:g}s", std::chrono::duration<double>(d).count());
}

}  // namespace

std::string describe_health_change(const NodeSpec& node, NodeHealth from, NodeHealth to,
                                   HealthCause cause, Duration for_how_long) {
  std::string what;
  switch (to) {
    case NodeHealth::kUp: what = from == NodeHealth::kTrial ? "re-admitted" : "up again"; break;
    case NodeHealth::kDown: what = "down"; break;
    case NodeHealth::kEjected: what = "ejected for " + seconds_text(for_how_long); break;
    case NodeHealth::kTrial: what = "on trial (its next request decides)"; break;
  }
  return fmt::format("node {} ({}) {}: {}", node.name, role_word(node.role), what,
                     health_cause_name(cause));
}

std::string describe_placement(const Ticket& ticket, std::span<const PlacementInput> inputs,
                               std::size_t chosen) {
  std::string line =
      fmt::format("placed ticket {} ({}, {} prompt tokens, attempt {}) on {}; weighed", ticket.id,
                  role_word(ticket.role), ticket.prompt_tokens, ticket.attempt,
                  chosen < inputs.size() ? inputs[chosen].node->name : "?");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const sched::Candidate& c = inputs[i].candidate;
    fmt::format_to(std::back_inserter(line),
                   "{} {} {{matched {} tokens, outstanding {} tokens / {} requests, queued prefill "
                   "{} tokens ({} long), engine running {} waiting {} kv {:.0f}%",
                   i == 0 ? "" : ",", inputs[i].node->name, c.matched_tokens, c.outstanding_tokens,
                   c.outstanding_requests, c.queued_prefill_tokens, c.queued_long_prefills,
                   c.running, c.waiting, 100.0 * c.kv_usage);
    if (c.kv_transfer_seconds > 0) {
      fmt::format_to(std::back_inserter(line), ", kv transfer {:.3f}s", c.kv_transfer_seconds);
    }
    line += "}";
  }
  return line;
}

bool NodeEventLog::wants_placements() const { return logger_->should_log(spdlog::level::debug); }

void NodeEventLog::on_placement(const Ticket& ticket, std::span<const PlacementInput> inputs,
                                std::size_t chosen) {
  logger_->debug("{}", describe_placement(ticket, inputs, chosen));
}

void NodeEventLog::on_health_change(const NodeSpec& node, NodeHealth from, NodeHealth to,
                                    HealthCause cause, Duration for_how_long) {
  const std::string line = describe_health_change(node, from, to, cause, for_how_long);
  const bool worse = to == NodeHealth::kDown || to == NodeHealth::kEjected;
  if (worse) {
    log::get("proxy")->warn("{}", line);
  } else {
    log::get("proxy")->info("{}", line);
  }
  if (families_.health_changes) {
    if (auto child = families_.health_changes->with({node.name, health_name(to)})) {
      (*child)->inc();
    }
  }
}

NodeEventLog::NodeSeries* NodeEventLog::series(const NodeSpec& node) {
  if (!families_.legs || !families_.leg_seconds) return nullptr;
  auto [it, added] = series_.try_emplace({node.name, node.role});
  if (!added) return &it->second;
  NodeSeries& s = it->second;
  const std::string_view pool = role_word(node.role);
  constexpr std::array<std::string_view, 3> kOutcomes = {"success", "failure", "neutral"};
  for (std::size_t o = 0; o < kOutcomes.size(); ++o) {
    auto child = families_.legs->with({pool, node.name, kOutcomes[o]});
    s.legs[o] = child ? *child : nullptr;
  }
  auto seconds = families_.leg_seconds->with({pool, node.name});
  s.seconds = seconds ? *seconds : nullptr;
  return &s;
}

void NodeEventLog::on_release(const NodeSpec& node, Outcome outcome, Duration held) {
  NodeSeries* s = series(node);
  if (!s) return;
  const auto o = static_cast<std::size_t>(outcome);
  if (o < s->legs.size() && s->legs[o]) s->legs[o]->inc();
  if (s->seconds) s->seconds->observe(std::chrono::duration<double>(held).count());
}

Result<NodeMetricFamilies> register_node_metrics(metrics::Registry& registry) {
  NodeMetricFamilies f;
  auto changes = registry.counter(
      "omni_proxy_node_health_changes_total",
      "Node health changes, by node and new state (up, down, ejected, trial).", {"node", "to"});
  if (!changes) return std::move(changes).error();
  f.health_changes = *changes;
  auto legs = registry.counter(
      "omni_proxy_node_legs_total",
      "Engine calls (legs) ended on each node, by outcome: success, failure (counts against "
      "the node), neutral (the client left or the other leg failed).",
      {"pool", "node", "outcome"});
  if (!legs) return std::move(legs).error();
  f.legs = *legs;
  auto seconds = registry.histogram("omni_proxy_node_leg_seconds",
                                    "Time each engine call held its node, dispatch to release.",
                                    {"pool", "node"}, latency_buckets());
  if (!seconds) return std::move(seconds).error();
  f.leg_seconds = *seconds;
  auto waits = registry.histogram(
      "omni_proxy_queue_wait_seconds",
      "Time requests waited in the proxy queue, by band and cause: no_capacity (every node over "
      "its thresholds, down or draining), policy_hold (the policy held it), priority (a more "
      "urgent band went first), queue_order (its own band's order: policy, tenant fairness). "
      "A request that waited for several causes is observed once per cause.",
      {"band", "cause"}, latency_buckets());
  if (!waits) return std::move(waits).error();
  f.queue_wait = *waits;
  auto shed = registry.counter(
      "omni_proxy_shed_total",
      "Requests given up under overload (answered 429), by band and reason: "
      "evicted (a more urgent request needed its place in the full queue), band_full (the band "
      "had max_waiting requests waiting), band_timeout (it waited past the band's timeout), "
      "queue_share (the queue was full and its tenant held more of it than the newcomer's).",
      {"band", "reason"});
  if (!shed) return std::move(shed).error();
  f.shed = *shed;
  return f;
}

void NodeEventLog::on_waited(const Ticket& ticket, const WaitTimes& waited) {
  if (!families_.queue_wait) return;
  for (std::size_t cause = 0; cause < waited.size(); ++cause) {
    if (waited[cause] <= Duration::zero()) continue;
    auto [it, added] = waits_.try_emplace({ticket.band, cause}, nullptr);
    if (added) {
      auto child = families_.queue_wait->with(
          {band_name(bands_, ticket.band), wait_cause_name(static_cast<WaitCause>(cause))});
      it->second = child ? *child : nullptr;
    }
    if (it->second) it->second->observe(std::chrono::duration<double>(waited[cause]).count());
  }
}

void NodeEventLog::on_shed(const Ticket& ticket, ShedReason reason) {
  if (!families_.shed) return;
  if (auto child =
          families_.shed->with({band_name(bands_, ticket.band), shed_reason_name(reason)})) {
    (*child)->inc();
  }
}

std::optional<std::string> ThrottledEvents::note(std::string_view kind, std::string_view detail,
                                                 TimePoint now) {
  std::lock_guard lock(mu_);
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    kinds_.emplace(std::string(kind), Kind{now, 0});
    return fmt::format("{}: {}", kind, detail);
  }
  Kind& k = it->second;
  if (now - k.last_said < interval_) {
    ++k.held;
    return std::nullopt;
  }
  const std::uint64_t held = k.held;
  const Duration since = now - k.last_said;
  k.last_said = now;
  k.held = 0;
  if (held == 0) return fmt::format("{}: {}", kind, detail);
  return fmt::format("{}: {} ({} more in the last {})", kind, detail, held, seconds_text(since));
}

}  // namespace omni::proxy
