// The router seam of the cluster simulator: what a gateway sees (the request, its block hashes,
// every instance's load) and the decision it makes (which prefill and which decode instance).
// The gateway's own policies plug in here; the baselines below are the usual suspects.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/random.hpp"
#include "omni/common/result.hpp"

namespace omni::cluster {

enum class Role : std::uint8_t { kPrefill, kDecode, kMixed };

// One instance as a gateway sees it. Outstanding counts are the gateway's own bookkeeping
// (counted at dispatch, released on completion); running/waiting/kv_usage are what the engine
// last reported (after its latest step).
struct InstanceLoad {
  std::uint32_t index = 0;  // position in its pool
  Role role = Role::kMixed;
  std::uint32_t group = 0;  // PD group: a decode choice stays in the prefill node's group
  std::uint32_t outstanding_requests = 0;
  std::uint64_t outstanding_tokens = 0;
  std::uint64_t queued_prefill_tokens = 0;  // dispatched, not yet prefilled, uncached at dispatch
  std::uint32_t running = 0;
  std::uint32_t waiting = 0;
  double kv_usage = 0.0;
  // Dispatched prompts not yet prefilled whose uncached part is at least
  // sched::kLongPrefillTokens (for sequence balancing).
  std::uint32_t queued_long_prefills = 0;
};

struct RoutingRequest {
  std::uint64_t id = 0;
  double now = 0.0;
  double arrival = 0.0;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_output_tokens = 0;
  std::span<const std::uint64_t> block_hashes;  // engine-level, chained
  // The request waits for a decode node (its prefill is done), not for its first placement:
  // queue_score may order the two queues differently.
  bool awaiting_decode = false;
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  // The prefill pool (empty in aggregated mode) and the decode (or aggregated) pool.
  virtual std::span<const InstanceLoad> prefill() const = 0;
  virtual std::span<const InstanceLoad> decode() const = 0;
  // Tokens of this prompt already cached on an instance (exact, from the engine's cache; a
  // gateway would learn it from KV events).
  virtual std::uint32_t cached_prefix_tokens(Role pool, std::uint32_t index,
                                             std::span<const std::uint64_t> hashes) const = 0;
  virtual std::uint32_t block_size() const = 0;
  // Seconds to move a prompt's KV from a prefill instance to a decode instance (0 where not
  // modelled).
  virtual double kv_transfer_seconds(std::uint32_t /*prompt_tokens*/,
                                     const InstanceLoad& /*prefill*/,
                                     const InstanceLoad& /*decode*/) const {
    return 0.0;
  }
};

class RouterPolicy {
 public:
  virtual ~RouterPolicy() = default;
  virtual std::string_view name() const = 0;
  // Index into view.prefill(); only called when the prefill pool is not empty. nullopt holds the
  // request at the gateway until some load is released.
  virtual std::optional<std::uint32_t> choose_prefill(const RoutingRequest& request,
                                                      const ClusterView& view) = 0;
  // Index into view.decode(). `prefill` is the chosen prefill instance (nullptr in aggregated
  // mode); with PD groups the choice must stay in prefill->group. nullopt holds the request at
  // the gateway: in aggregated mode until load is released, in PD mode (after the prefill) until
  // decode load is released or ClusterConfig::max_decode_wait_s has passed, when the simulator
  // places it on the group's decode instance with the fewest outstanding tokens.
  virtual std::optional<std::uint32_t> choose_decode(const RoutingRequest& request,
                                                     const InstanceLoad* prefill,
                                                     const ClusterView& view) = 0;
  // Order of held requests (lowest first).
  virtual double queue_score(const RoutingRequest& request) const { return request.arrival; }
  // A prefill instance (or an aggregated one) finished prefilling `tokens` uncached tokens after
  // `busy_seconds` of continuous work: what a gateway can learn a node's speed from.
  virtual void on_prefill_done(std::uint32_t /*index*/, std::uint64_t /*tokens*/,
                               double /*busy_seconds*/) {}
};

// The cluster-only baselines "random", "least-requests" (fewest outstanding requests) and
// "least-tokens" (fewest outstanding tokens), plus every omni::sched placement policy
// (round-robin, least-load, sglang-cache-aware, llm-d, dynamo, omni-anchor, omni). Ties go to
// the lowest index.
Result<std::unique_ptr<RouterPolicy>> make_policy(std::string_view name, std::uint64_t seed);
std::vector<std::string> policy_names();

}  // namespace omni::cluster
