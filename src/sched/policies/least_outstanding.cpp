// "least-outstanding": omni-proxy's first policy. Node choice as least-load (outstanding tokens,
// then outstanding requests, then the lowest id); queue order shortest prompt first, every second
// of waiting worth 4096 tokens of shortness, so a long prompt is never starved.
#include "common.hpp"

namespace omni::sched::policies {
namespace {

class LeastOutstanding final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "least-outstanding"; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage,
                                    std::span<const Candidate> candidates) override {
    return argmin(candidates, [](const Candidate& c) {
      return std::pair(c.outstanding_tokens, c.outstanding_requests);
    });
  }
  double queue_score(const PlacementRequest& r) const override {
    return static_cast<double>(r.prompt_tokens) - kAgingTokensPerSecond * (r.now - r.arrival);
  }

 private:
  static constexpr double kAgingTokensPerSecond = 4096.0;
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_least_outstanding() {
  return std::make_unique<LeastOutstanding>();
}

}  // namespace omni::sched::policies
