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

// A node's load as the engine itself last reported it (zero until the proxy learns it).
struct EngineLoad {
  std::uint32_t running = 0;
  std::uint32_t waiting = 0;
  double kv_usage = 0.0;  // 0..1
};

// One eligible candidate (healthy, not draining, not already tried, in the right PD group,
// under its thresholds).
struct NodeView {
  std::uint32_t id = 0;  // stable for the node's lifetime in the Scheduler
  std::string_view name;
  std::string_view group;
  NodeLoad load;
  NodeLoad limits;  // the thresholds
  // load.outstanding_tokens without the outputs reserved for decode (max_tokens).
  std::uint64_t outstanding_prompt_tokens = 0;
  // Uncached prompt tokens dispatched to this node for prefill and not yet released.
  std::uint64_t queued_prefill_tokens = 0;
  // Of those, the prompts whose uncached part alone fills a step (sched::kLongPrefillTokens).
  std::uint32_t queued_long_prefills = 0;
  // Leading tokens of the ticket's prompt this node holds (prefix index); 0 when the policy
  // does not ask, the ticket has no block hashes, or the node's event stream is stale.
  std::uint32_t matched_tokens = 0;
  EngineLoad engine;
};

// A request waiting for a node.
struct TicketView {
  std::uint64_t id = 0;
  Role role = Role::kPrefill;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t max_tokens = 0;
  TimePoint enqueued{};
  std::uint32_t attempt = 0;  // 0 for the first try
  bool aggregated = false;    // one engine serves the whole request (role is kDecode then)
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
  // Whether pick() reads NodeView::matched_tokens (the Scheduler then looks the prompt up in
  // its prefix index for every candidate).
  virtual bool uses_prefix_matches() const noexcept { return false; }
  // A prefill leg on `node` ended well: `tokens` uncached prompt tokens took `busy_seconds` of
  // the node's continuous work (learning policies estimate node speed from this).
  virtual void observe_prefill(std::uint32_t /*node*/, std::uint64_t /*tokens*/,
                               double /*busy_seconds*/) {}
};

// Settings every built-in policy understands.
struct PolicyOptions {
  // Queue aging: one second of waiting is worth this many prompt tokens of shortness.
  double aging_tokens_per_second = 4096.0;
  // Weight of shortness in the queue score (0: pure FIFO).
  double shortness_weight = 1.0;
  // The engines' KV block size in tokens (cost models count blocks).
  std::uint32_t block_size = 16;
};

struct PolicySummary {
  std::string name;
  std::string summary;  // one line
};

// The omni::sched placement policies (sched::placement_policies(): round-robin, least-load,
// sglang-cache-aware, llm-d, dynamo, omni-anchor, omni — the default — and "omni:key=value..."
// tunings) behind this seam, plus the proxy's own "least-outstanding" (least outstanding tokens,
// ties by fewest running, then by id; queue order by prompt length with aging).
// kNotFound for another name, with the valid names in the message.
inline constexpr std::string_view kDefaultPolicy = "omni";
Result<std::unique_ptr<Policy>> make_policy(std::string_view name, PolicyOptions options = {});
std::vector<std::string> policy_names();
std::vector<PolicySummary> policy_summaries();

}  // namespace omni::proxy
