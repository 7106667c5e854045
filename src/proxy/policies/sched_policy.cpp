// An omni::sched placement policy behind the proxy's Policy seam, so that omni-proxy runs the
// very code omni-cluster compares (src/cluster/policies.cpp is the simulator's twin).
//
// Mapping: a NodeView becomes a sched::Candidate with the proxy's dispatch-time counts
// (outstanding requests = running leases, outstanding tokens, queued uncached prefill tokens),
// the engine-reported load, and the prefix match the Scheduler looked up. The stage is kPrefill
// for prefill tickets, kDecode for decode tickets in PD modes and kAggregated when one engine
// serves the whole request. Times become seconds on the Scheduler's clock.
#include <chrono>

#include "omni/sched/policy.hpp"
#include "policies.hpp"

namespace omni::proxy::policies {
namespace {

double seconds(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

sched::Stage stage_of(const TicketView& ticket) {
  if (ticket.aggregated) return sched::Stage::kAggregated;
  return ticket.role == Role::kPrefill ? sched::Stage::kPrefill : sched::Stage::kDecode;
}

sched::Candidate candidate_of(const NodeView& node, sched::Stage stage) {
  sched::Candidate c;
  c.instance = node.id;
  c.outstanding_requests = node.load.running;
  // Aggregated requests stay outstanding through their whole decode; their reserved outputs
  // (max_tokens, an upper bound) are not prefill work, which is what these policies weigh there.
  c.outstanding_tokens = stage == sched::Stage::kAggregated ? node.outstanding_prompt_tokens
                                                            : node.load.outstanding_tokens;
  c.queued_prefill_tokens = node.queued_prefill_tokens;
  c.queued_long_prefills = node.queued_long_prefills;
  c.running = node.engine.running;
  c.waiting = node.engine.waiting;
  c.kv_usage = node.engine.kv_usage;
  c.matched_tokens = node.matched_tokens;
  return c;
}

class SchedPolicy final : public Policy {
 public:
  SchedPolicy(std::string name, std::unique_ptr<sched::PlacementPolicy> policy,
              PolicyOptions options)
      : name_(std::move(name)), policy_(std::move(policy)), options_(options) {}

  std::string_view name() const noexcept override { return name_; }
  bool uses_prefix_matches() const noexcept override { return policy_->uses_prefix_matches(); }

  double queue_score(const TicketView& ticket, TimePoint now) const override {
    return policy_->queue_score(request_of(ticket, now));
  }

  std::optional<std::size_t> pick(const TicketView& ticket,
                                  std::span<const NodeView> candidates) override {
    candidates_.clear();
    const sched::Stage stage = stage_of(ticket);
    for (const NodeView& node : candidates) candidates_.push_back(candidate_of(node, stage));
    // The policy's "now" only matters for queue order; placement reads loads and matches.
    const auto chosen =
        policy_->choose(request_of(ticket, ticket.enqueued), stage_of(ticket), candidates_);
    if (!chosen || *chosen >= candidates.size()) return std::nullopt;
    return chosen;
  }

  void observe_prefill(std::uint32_t node, std::uint64_t tokens, double busy_seconds) override {
    policy_->observe_prefill(node, tokens, busy_seconds);
  }

 private:
  sched::PlacementRequest request_of(const TicketView& ticket, TimePoint now) const {
    sched::PlacementRequest r;
    r.id = ticket.id;
    r.now = seconds(now);
    r.arrival = seconds(ticket.enqueued);
    r.prompt_tokens =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(ticket.prompt_tokens, UINT32_MAX));
    r.max_output_tokens =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(ticket.max_tokens, UINT32_MAX));
    r.block_size = options_.block_size;
    r.stage = stage_of(ticket);
    return r;
  }

  std::string name_;  // as the operator chose it
  std::unique_ptr<sched::PlacementPolicy> policy_;
  PolicyOptions options_;
  std::vector<sched::Candidate> candidates_;  // reused per pick
};

}  // namespace

// A gateway cannot know its engines' prefill speed in advance (hardware, parallelism, model
// and, for omni-sim, --speed all change it), so plain "omni" learns it per node from the prefill
// durations it observes (learn=2). omni-cluster's instances are known and identical, where the
// nominal speed is the better estimate. Live on omni-sim the learned speed gave the better TTFT
// p99 (bench/scheduling/live.sh; docs/scheduling.md). An explicit tuning string is kept as is.
std::string_view placement_name(std::string_view name) {
  return name == "omni" ? std::string_view("omni:learn=2") : name;
}

Result<std::unique_ptr<Policy>> make_sched_policy(std::string_view name, PolicyOptions options) {
  auto policy = sched::make_placement_policy(placement_name(name));
  if (!policy) return std::move(policy).error();
  return std::unique_ptr<Policy>(
      std::make_unique<SchedPolicy>(std::string(name), std::move(*policy), options));
}

}  // namespace omni::proxy::policies
