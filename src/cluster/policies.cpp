#include <algorithm>

#include "omni/cluster/policy.hpp"
#include "omni/sched/policy.hpp"

namespace omni::cluster {
namespace {

bool in_group(const InstanceLoad& candidate, const InstanceLoad* prefill) {
  return prefill == nullptr || candidate.group == prefill->group;
}

// The candidate with the smallest key among those in the prefill's group (lowest index on ties).
template <class Key>
std::uint32_t argmin(std::span<const InstanceLoad> pool, const InstanceLoad* prefill, Key key) {
  std::uint32_t best = 0;
  bool found = false;
  decltype(key(pool[0])) best_key{};
  for (const InstanceLoad& candidate : pool) {
    if (!in_group(candidate, prefill)) continue;
    const auto k = key(candidate);
    if (!found || k < best_key) {
      best = candidate.index;
      best_key = k;
      found = true;
    }
  }
  return best;
}

class RandomChoice final : public RouterPolicy {
 public:
  explicit RandomChoice(std::uint64_t seed) : random_(seed) {}
  std::string_view name() const override { return "random"; }
  std::optional<std::uint32_t> choose_prefill(const RoutingRequest&,
                                              const ClusterView& view) override {
    return static_cast<std::uint32_t>(random_.next_u64() % view.prefill().size());
  }
  std::optional<std::uint32_t> choose_decode(const RoutingRequest&, const InstanceLoad* prefill,
                                             const ClusterView& view) override {
    candidates_.clear();
    for (const auto& candidate : view.decode()) {
      if (in_group(candidate, prefill)) candidates_.push_back(candidate.index);
    }
    if (candidates_.empty()) return 0;
    return candidates_[random_.next_u64() % candidates_.size()];
  }

 private:
  SeededRandom random_;
  std::vector<std::uint32_t> candidates_;
};

template <class Key>
class LeastBy final : public RouterPolicy {
 public:
  LeastBy(std::string_view name, Key key) : name_(name), key_(key) {}
  std::string_view name() const override { return name_; }
  std::optional<std::uint32_t> choose_prefill(const RoutingRequest&,
                                              const ClusterView& view) override {
    return argmin(view.prefill(), nullptr, key_);
  }
  std::optional<std::uint32_t> choose_decode(const RoutingRequest&, const InstanceLoad* prefill,
                                             const ClusterView& view) override {
    return argmin(view.decode(), prefill, key_);
  }

 private:
  std::string_view name_;
  Key key_;
};

// An omni::sched placement policy behind the simulator's seam: builds the candidates a gateway
// would see (the prefill's PD group only, prefix matches when the policy wants them).
class SchedPolicy final : public RouterPolicy {
 public:
  explicit SchedPolicy(std::unique_ptr<sched::PlacementPolicy> policy)
      : policy_(std::move(policy)) {}
  std::string_view name() const override { return policy_->name(); }

  std::optional<std::uint32_t> choose_prefill(const RoutingRequest& request,
                                              const ClusterView& view) override {
    return choose(request, view, Role::kPrefill, view.prefill(), nullptr, sched::Stage::kPrefill);
  }
  std::optional<std::uint32_t> choose_decode(const RoutingRequest& request,
                                             const InstanceLoad* prefill,
                                             const ClusterView& view) override {
    const bool aggregated = view.prefill().empty();
    const auto stage = aggregated ? sched::Stage::kAggregated : sched::Stage::kDecode;
    // nullopt in PD mode: the simulator holds the prefilled request, within its bounds.
    return choose(request, view, Role::kDecode, view.decode(), prefill, stage);
  }
  double queue_score(const RoutingRequest& request) const override {
    return policy_->queue_score(placement(request, 0));
  }
  void on_prefill_done(std::uint32_t index, std::uint64_t tokens, double busy) override {
    policy_->observe_prefill(index, tokens, busy);
  }

 private:
  static sched::PlacementRequest placement(const RoutingRequest& r, std::uint32_t block_size) {
    sched::PlacementRequest p;
    p.id = r.id;
    p.now = r.now;
    p.arrival = r.arrival;
    p.prompt_tokens = r.prompt_tokens;
    p.max_output_tokens = r.max_output_tokens;
    p.block_size = block_size;
    p.stage = r.awaiting_decode ? sched::Stage::kDecode : sched::Stage::kPrefill;
    return p;
  }

  std::optional<std::uint32_t> choose(const RoutingRequest& request, const ClusterView& view,
                                      Role role, std::span<const InstanceLoad> pool,
                                      const InstanceLoad* prefill, sched::Stage stage) {
    candidates_.clear();
    const bool matches = policy_->uses_prefix_matches() && stage != sched::Stage::kDecode;
    for (const InstanceLoad& load : pool) {
      if (!in_group(load, prefill)) continue;
      sched::Candidate c;
      c.instance = load.index;
      c.group = load.group;
      c.outstanding_requests = load.outstanding_requests;
      c.outstanding_tokens = load.outstanding_tokens;
      c.queued_prefill_tokens = load.queued_prefill_tokens;
      c.running = load.running;
      c.waiting = load.waiting;
      c.kv_usage = load.kv_usage;
      c.queued_long_prefills = load.queued_long_prefills;
      if (matches) c.matched_tokens = view.cached_prefix_tokens(role, load.index, request.block_hashes);
      if (stage == sched::Stage::kDecode && prefill != nullptr) {
        c.kv_transfer_seconds = view.kv_transfer_seconds(request.prompt_tokens, *prefill, load);
      }
      candidates_.push_back(c);
    }
    if (candidates_.empty()) return std::nullopt;
    sched::PlacementRequest p = placement(request, view.block_size());
    p.stage = stage;
    if (prefill != nullptr) p.prefill_instance = prefill->index;
    p.decode_may_wait = stage == sched::Stage::kDecode && request.awaiting_decode;
    const auto chosen = policy_->choose(p, stage, candidates_);
    if (!chosen) return std::nullopt;
    return candidates_[std::min(*chosen, candidates_.size() - 1)].instance;
  }

  std::unique_ptr<sched::PlacementPolicy> policy_;
  std::vector<sched::Candidate> candidates_;
};

}  // namespace

std::vector<std::string> policy_names() {
  std::vector<std::string> names = {"random", "least-requests", "least-tokens"};
  for (const auto& info : sched::placement_policies()) names.push_back(info.name);
  return names;
}

Result<std::unique_ptr<RouterPolicy>> make_policy(std::string_view name, std::uint64_t seed) {
  if (name == "random") return std::unique_ptr<RouterPolicy>(new RandomChoice(seed));
  if (name == "least-requests") {
    auto key = [](const InstanceLoad& l) { return l.outstanding_requests; };
    return std::unique_ptr<RouterPolicy>(new LeastBy<decltype(key)>("least-requests", key));
  }
  if (name == "least-tokens") {
    auto key = [](const InstanceLoad& l) { return l.outstanding_tokens; };
    return std::unique_ptr<RouterPolicy>(new LeastBy<decltype(key)>("least-tokens", key));
  }
  auto policy = sched::make_placement_policy(name, seed);
  if (!policy) {
    std::string known;
    for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown policy '" + std::string(name) + "' (known: " + known + ")");
  }
  return std::unique_ptr<RouterPolicy>(new SchedPolicy(std::move(*policy)));
}

}  // namespace omni::cluster
