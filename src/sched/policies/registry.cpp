// The one registry of placement policies: omni-proxy, omni-cluster, their --help and the docs
// read names and summaries from here. Adding a policy: its file, and one line below.
#include "common.hpp"

namespace omni::sched {
namespace {

struct Entry {
  const char* name;
  const char* summary;
  Result<std::unique_ptr<PlacementPolicy>> (*make)(std::string_view spec, const PolicySettings&);
};

template <std::unique_ptr<PlacementPolicy> (*Make)()>
Result<std::unique_ptr<PlacementPolicy>> plain(std::string_view, const PolicySettings&) {
  return Make();
}

Result<std::unique_ptr<PlacementPolicy>> seeded(std::string_view, const PolicySettings& s) {
  return policies::make_random(s.seed);
}

constexpr Entry kEntries[] = {
    {"omni",
     "ours: earliest predicted prefill finish, sequence balancing, LPT decode queue "
     "(tunable: omni:cache=W:hold=S:...)",
     policies::make_omni},
    {"round-robin", "candidates in turn", plain<policies::make_round_robin>},
    {"random", "a uniformly random candidate (seeded)", seeded},
    {"least-requests", "fewest outstanding requests", plain<policies::make_least_requests>},
    {"least-tokens", "fewest outstanding tokens", plain<policies::make_least_tokens>},
    {"least-load", "fewest outstanding tokens, then fewest requests",
     plain<policies::make_least_load>},
    {"least-outstanding", "as least-load; queue order shortest prompt first with aging",
     plain<policies::make_least_outstanding>},
    {"sglang-cache-aware",
     "SGLang model gateway cache_aware: balance thresholds 64 / 1.5x, match threshold 0.3",
     plain<policies::make_sglang_cache_aware>},
    {"llm-d", "llm-d default scorer: queue x2 + KV utilisation x2 + prefix x3",
     plain<policies::make_llm_d>},
    {"dynamo", "NVIDIA Dynamo KV router: prefill blocks after cached overlap + active blocks",
     plain<policies::make_dynamo>},
    {"omni-anchor",
     "Omni Proxy as published: 0.8 shortness / 0.2 waiting, 32000-token / 32-request limits",
     plain<policies::make_omni_anchor>},
};

// "omni:cache=2" names the omni family with a tuning.
std::string_view family_of(std::string_view spec) { return spec.substr(0, spec.find(':')); }

}  // namespace

std::vector<PolicyInfo> placement_policies() {
  std::vector<PolicyInfo> out;
  for (const Entry& e : kEntries) out.push_back({e.name, e.summary});
  return out;
}

std::string policy_names_joined() {
  std::string known;
  for (const Entry& e : kEntries) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return known;
}

Result<std::unique_ptr<PlacementPolicy>> make_placement_policy(std::string_view spec,
                                                               const PolicySettings& settings) {
  const std::string_view family = family_of(spec);
  for (const Entry& e : kEntries) {
    if (family != e.name) continue;
    if (family != spec && family != "omni") break;  // only omni takes a tuning
    return e.make(spec, settings);
  }
  return make_error(ErrorCode::kNotFound, "unknown policy '" + std::string(spec) +
                                              "' (known: " + policy_names_joined() + ")");
}

std::string_view node_speed_name(NodeSpeed speed) noexcept {
  return speed == NodeSpeed::kLearned ? "learned" : "equal";
}

}  // namespace omni::sched
