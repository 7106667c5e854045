// "least-requests": the fewest outstanding requests (as the gateway counts them at dispatch),
// ties to the lowest node id. The classic least-connections balancer.
#include "common.hpp"

namespace omni::sched::policies {
namespace {

class LeastRequests final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "least-requests"; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage,
                                    std::span<const Candidate> candidates) override {
    return argmin(candidates, [](const Candidate& c) { return c.outstanding_requests; });
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_least_requests() { return std::make_unique<LeastRequests>(); }

}  // namespace omni::sched::policies
