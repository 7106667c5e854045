// Helpers shared by the placement policies (one policy per file in this folder).
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "omni/sched/policy.hpp"

namespace omni::sched::policies {

inline double match_rate(const PlacementRequest& r, const Candidate& c) {
  return r.prompt_tokens == 0 ? 0.0 : static_cast<double>(c.matched_tokens) / r.prompt_tokens;
}

// Index of the candidate with the smallest key (first one on ties: the core lists candidates in
// node-id order, so ties go to the lowest id).
template <class Key>
std::size_t argmin(std::span<const Candidate> candidates, Key key) {
  std::size_t best = 0;
  auto best_key = key(candidates[0]);
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    const auto k = key(candidates[i]);
    if (k < best_key) {
      best = i;
      best_key = k;
    }
  }
  return best;
}

// The factories the registry (registry.cpp) lists; one per file.
std::unique_ptr<PlacementPolicy> make_round_robin();
std::unique_ptr<PlacementPolicy> make_random(std::uint64_t seed);
std::unique_ptr<PlacementPolicy> make_least_requests();
std::unique_ptr<PlacementPolicy> make_least_tokens();
std::unique_ptr<PlacementPolicy> make_least_load();
std::unique_ptr<PlacementPolicy> make_least_outstanding();
std::unique_ptr<PlacementPolicy> make_sglang_cache_aware();
std::unique_ptr<PlacementPolicy> make_llm_d();
std::unique_ptr<PlacementPolicy> make_dynamo();
std::unique_ptr<PlacementPolicy> make_omni_anchor();
Result<std::unique_ptr<PlacementPolicy>> make_omni(std::string_view spec,
                                                   const PolicySettings& settings);

}  // namespace omni::sched::policies
