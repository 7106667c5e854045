// "round-robin": the candidates in turn, one counter per stage.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

class RoundRobin final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "round-robin"; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage stage,
                                    std::span<const Candidate> candidates) override {
    return static_cast<std::size_t>(next_[static_cast<int>(stage)]++ % candidates.size());
  }

 private:
  std::uint64_t next_[3] = {0, 0, 0};
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_round_robin() { return std::make_unique<RoundRobin>(); }

}  // namespace omni::sched::policies
