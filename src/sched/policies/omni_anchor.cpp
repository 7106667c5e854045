// "omni-anchor": Omni Proxy as published (the anchor we rebuild).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

// omni-infer's Omni Proxy as published: the prefill queue is ordered by 0.8 x shortness + 0.2 x
// waiting time; a node takes work only under 32,000 outstanding tokens and 32 running requests;
// among those, the deepest prefix match wins, then the least outstanding tokens; when no node is
// under its thresholds the request waits in the proxy. (The publication gives the weights and
// thresholds, not the normalisation: shortness is the prompt over the token threshold, waiting
// is in seconds.)
class OmniAnchor final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "omni-anchor"; }
  bool uses_prefix_matches() const override { return true; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage stage,
                                    std::span<const Candidate> candidates) override {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      const bool under = static_cast<double>(c.outstanding_tokens) < kMaxTokens &&
                         c.outstanding_requests < kMaxRequests;
      if (!under && stage != Stage::kDecode) continue;
      if (!best || better(c, candidates[*best])) best = i;
    }
    return best;
  }
  double queue_score(const PlacementRequest& r) const override {
    return 0.8 * (r.prompt_tokens / kMaxTokens) - 0.2 * (r.now - r.arrival);
  }

 private:
  static bool better(const Candidate& a, const Candidate& b) {
    if (a.matched_tokens != b.matched_tokens) return a.matched_tokens > b.matched_tokens;
    return a.outstanding_tokens < b.outstanding_tokens;
  }
  static constexpr double kMaxTokens = 32000, kMaxRequests = 32;
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_omni_anchor() { return std::make_unique<OmniAnchor>(); }

}  // namespace omni::sched::policies
