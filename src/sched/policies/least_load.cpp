// "least-load": least outstanding tokens, then fewest outstanding requests.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

// Least outstanding tokens as the gateway counts them, ties by fewest outstanding requests.
class LeastLoad final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "least-load"; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage,
                                    std::span<const Candidate> candidates) override {
    return argmin(candidates, [](const Candidate& c) {
      return std::pair(c.outstanding_tokens, c.outstanding_requests);
    });
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_least_load() { return std::make_unique<LeastLoad>(); }

}  // namespace omni::sched::policies
