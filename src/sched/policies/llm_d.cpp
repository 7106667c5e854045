// "llm-d": llm-d's default scorer profile.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

// llm-d inference scheduler's default profile: the weighted sum of the queue scorer (2), the
// KV-cache utilisation scorer (2) and the prefix-cache scorer (3), highest total wins. Queue
// score: min-max normalised waiting queue (shortest = 1); KV: 1 - usage; prefix: the share of the
// prompt's blocks cached.
class LlmD final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "llm-d"; }
  bool uses_prefix_matches() const override { return true; }
  std::optional<std::size_t> choose(const PlacementRequest& request, Stage,
                                    std::span<const Candidate> candidates) override {
    const auto [lo, hi] = std::minmax_element(
        candidates.begin(), candidates.end(),
        [](const Candidate& a, const Candidate& b) { return a.waiting < b.waiting; });
    const double span = static_cast<double>(hi->waiting) - lo->waiting;
    return argmin(candidates, [&](const Candidate& c) {
      const double queue = span > 0 ? (hi->waiting - static_cast<double>(c.waiting)) / span : 1.0;
      const double kv = 1.0 - std::clamp(c.kv_usage, 0.0, 1.0);
      const double prefix = match_rate(request, c);
      return -(2.0 * queue + 2.0 * kv + 3.0 * prefix);
    });
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_llm_d() { return std::make_unique<LlmD>(); }

}  // namespace omni::sched::policies
