#include "node_events.hpp"

#include <fmt/format.h>

#include "omni/log/log.hpp"

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

void NodeEventLog::on_health_change(const NodeSpec& node, NodeHealth from, NodeHealth to,
                                    HealthCause cause, Duration for_how_long) {
  const std::string line = describe_health_change(node, from, to, cause, for_how_long);
  const bool worse = to == NodeHealth::kDown || to == NodeHealth::kEjected;
  if (worse) {
    log::get("proxy")->warn("{}", line);
  } else {
    log::get("proxy")->info("{}", line);
  }
  if (changes_) {
    if (auto child = changes_->with({node.name, health_name(to)})) (*child)->inc();
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
