// "sglang-cache-aware": SGLang model gateway's cache_aware policy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

// SGLang model gateway (sgl-router) "cache_aware": when the load is imbalanced (max - min >
// 64 requests and max > 1.5 x min) go to the least loaded worker; otherwise to the worker with
// the highest prefix match if its match rate exceeds 0.3, else to the worker with the smallest
// radix tree. Load = requests in flight; the tree size is approximated by KV-cache usage.
class SglangCacheAware final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "sglang-cache-aware"; }
  bool uses_prefix_matches() const override { return true; }
  std::optional<std::size_t> choose(const PlacementRequest& request, Stage,
                                    std::span<const Candidate> candidates) override {
    const auto [lo, hi] = std::minmax_element(
        candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
          return a.outstanding_requests < b.outstanding_requests;
        });
    const double min_load = lo->outstanding_requests, max_load = hi->outstanding_requests;
    if (max_load - min_load > kBalanceAbs && max_load > kBalanceRel * min_load) {
      return static_cast<std::size_t>(lo - candidates.begin());
    }
    const std::size_t best =
        argmin(candidates, [&](const Candidate& c) { return -match_rate(request, c); });
    if (match_rate(request, candidates[best]) > kCacheThreshold) return best;
    return argmin(candidates, [](const Candidate& c) { return c.kv_usage; });
  }

 private:
  static constexpr double kBalanceAbs = 64, kBalanceRel = 1.5, kCacheThreshold = 0.3;
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_sglang_cache_aware() {
  return std::make_unique<SglangCacheAware>();
}

}  // namespace omni::sched::policies
