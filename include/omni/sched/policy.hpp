// The one policy seam of the gateway: which node serves a request, and in which order waiting
// requests are placed. The gateway core (omni/proxy/scheduler.hpp) calls it, in omni-proxy (wall
// time) and in omni-cluster (virtual time) alike; a policy sees only what a gateway sees — the
// request, every eligible node's load as the gateway counts it, and how much of the prompt each
// node has cached (the global prefix index) — and never touches clocks, threads or sockets.
// Eligibility (health, draining, PD group, thresholds, "already tried") is the core's business:
// a policy only ranks what it is given.
//
// Policies live one per file in src/sched/policies/ and are listed once in its registry.cpp,
// which both binaries and their --help read (the docs list the same names by hand).
//
// Threading: a policy is called only from the thread that owns its core.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/sched/prefix_index.hpp"

namespace omni::sched {

// A node's pool, the one role vocabulary of proxy, simulator and policies.
enum class Role : std::uint8_t { kPrefill, kDecode };
// What a placement is for: a PD prefill leg, a PD decode leg, or a whole request on one node
// (aggregated mode: the decode pool serves it).
enum class Stage : std::uint8_t { kPrefill, kDecode, kAggregated };

struct Candidate {
  InstanceId instance = 0;  // the node's stable id in the core (also its prefix-index id)
  std::uint32_t outstanding_requests = 0;   // dispatched, not finished (gateway's count)
  std::uint64_t outstanding_tokens = 0;     // their prompt (+ output, at decode) tokens
  std::uint64_t queued_prefill_tokens = 0;  // dispatched prompt tokens not yet prefilled, uncached
  std::uint32_t running = 0;                // as the engine last reported
  std::uint32_t waiting = 0;
  double kv_usage = 0.0;             // 0..1
  std::uint32_t matched_tokens = 0;  // this prompt's prefix cached there
  // Sequence balancing: dispatched prompts not yet prefilled there whose uncached part is at
  // least kLongPrefillTokens (each one fills whole batches of that node on its own).
  std::uint32_t queued_long_prefills = 0;
  // Decode stage in PD: seconds to move this request's KV from its prefill node here (0 where
  // the caller models no per-pair difference).
  double kv_transfer_seconds = 0.0;
  std::uint64_t dispatched = 0;  // requests the gateway sent this node so far (tie-breaking)
};

// What counts as a long prompt for Candidate::queued_long_prefills: an uncached part of at
// least one default vLLM step budget (max_num_batched_tokens 8192).
inline constexpr std::uint32_t kLongPrefillTokens = 8192;

struct PlacementRequest {
  std::uint64_t id = 0;
  double now = 0.0;
  double arrival = 0.0;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_output_tokens = 0;
  std::uint32_t block_size = 16;
  // Which queue the request waits in, for queue_score (decode queues may order differently).
  Stage stage = Stage::kPrefill;
  // Decode stage in PD: where the prefill ran (its group bounds the choice) and how long moving
  // the KV to each decode candidate would take is the caller's business.
  std::optional<InstanceId> prefill_instance;
  // Decode stage: the caller can hold the request (its KV stays on the prefill node) and retry
  // when decode load is released, with a bounded wait. Without it a decode choice never holds.
  bool decode_may_wait = false;
};

// Settings the registry passes to every policy (--node-speed in both binaries).
enum class NodeSpeed : std::uint8_t {
  kLearned,  // per node, from the prefill durations the gateway observes (the default)
  kEqual,    // every node at one nominal speed
};
std::string_view node_speed_name(NodeSpeed speed) noexcept;

struct PolicySettings {
  std::uint64_t seed = 0;                      // random choices
  NodeSpeed node_speed = NodeSpeed::kLearned;  // predictive policies (omni)
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // Whether candidates need matched_tokens (a prefix-index lookup per candidate).
  virtual bool uses_prefix_matches() const { return false; }
  // The index of the chosen candidate, or nullopt to hold the request at the gateway until load
  // is released (for kPrefill / kAggregated, and for kDecode only when
  // request.decode_may_wait). `candidates` is never empty.
  virtual std::optional<std::size_t> choose(const PlacementRequest& request, Stage stage,
                                            std::span<const Candidate> candidates) = 0;
  // Order of held requests: the lowest score is placed first.
  virtual double queue_score(const PlacementRequest& request) const { return request.arrival; }
  // What the gateway observed: an instance finished prefilling `tokens` uncached tokens, and it
  // has been continuously busy for `busy_seconds` since its previous completion (or since the
  // request was dispatched, when it was idle before).
  virtual void observe_prefill(InstanceId, std::uint64_t /*tokens*/, double /*busy_seconds*/) {}
};

struct PolicyInfo {
  std::string name;
  std::string summary;  // one line, with the source of the published ones
};

// The registry: every policy with its one-line summary, "omni" (the default of both binaries)
// first. make_placement_policy() takes a name, or "omni:key=value:..." for a tuning of omni;
// kNotFound for anything else, with the known names in the message.
inline constexpr std::string_view kDefaultPolicy = "omni";
std::vector<PolicyInfo> placement_policies();
std::string policy_names_joined();  // "omni, round-robin, ..."
Result<std::unique_ptr<PlacementPolicy>> make_placement_policy(std::string_view spec,
                                                               const PolicySettings& settings = {});

}  // namespace omni::sched
