// "least-tokens": the fewest outstanding tokens alone, ties to the lowest node id (least-load
// also breaks token ties by outstanding requests).
#include "common.hpp"

namespace omni::sched::policies {
namespace {

class LeastTokens final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "least-tokens"; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage,
                                    std::span<const Candidate> candidates) override {
    return argmin(candidates, [](const Candidate& c) { return c.outstanding_tokens; });
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_least_tokens() { return std::make_unique<LeastTokens>(); }

}  // namespace omni::sched::policies
