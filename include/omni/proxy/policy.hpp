// The scheduling seam: how queued requests are ordered and which node each one goes to.
//
// The Scheduler (scheduler.hpp) owns the queues, the node loads, health and admission; a
// Policy only ranks and picks, from views the Scheduler prepares. Policies of the scheduling
// issue (prefix-aware, predictive, the published baselines) implement this interface and are
// registered by name in make_policy(); omni-proxy and the cluster simulator run the same ones.
//
// Threading: a Policy is called only from the thread that owns its Scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"

namespace omni::proxy {

enum class Role { kPrefill, kDecode };

// A node's load as the Scheduler counts it: at dispatch time, released on completion.
struct NodeLoad {
  std::uint64_t outstanding_tokens = 0;
  std::uint32_t running = 0;
};

// One eligible candidate (healthy, not draining, not already tried, in the right PD group,
// under its thresholds).
struct NodeView {
  std::uint32_t id = 0;  // stable for the node's lifetime in the Scheduler
  std::string_view name;
  std::string_view group;
  NodeLoad load;
  NodeLoad limits;  // the thresholds
};

// A request waiting for a node.
struct TicketView {
  std::uint64_t id = 0;
  Role role = Role::kPrefill;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t max_tokens = 0;
  TimePoint enqueued{};
  std::uint32_t attempt = 0;  // 0 for the first try
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const noexcept = 0;
  // Queue order: the lowest score is placed first. Must grow more favourable with waiting
  // (starvation aging) so no request waits forever behind a stream of preferred ones.
  virtual double queue_score(const TicketView& ticket, TimePoint now) const = 0;
  // The index in `candidates` of the node to use, or nullopt to keep the request waiting.
  // `candidates` is never empty.
  virtual std::optional<std::size_t> pick(const TicketView& ticket,
                                          std::span<const NodeView> candidates) = 0;
};

// Settings every built-in policy understands.
struct PolicyOptions {
  // Queue aging: one second of waiting is worth this many prompt tokens of shortness.
  double aging_tokens_per_second = 4096.0;
  // Weight of shortness in the queue score (0: pure FIFO).
  double shortness_weight = 1.0;
};

// "least-outstanding" (the default): least outstanding tokens, ties by fewest running, then
// by id; queue order by prompt length with aging.
// "round-robin": candidates in turn; FIFO queue.
// kNotFound for another name.
Result<std::unique_ptr<Policy>> make_policy(std::string_view name, PolicyOptions options = {});
std::vector<std::string> policy_names();

}  // namespace omni::proxy
