// "random": a uniformly random candidate (seeded: one seed, one sequence of choices).
#include "omni/common/random.hpp"
#include "common.hpp"

namespace omni::sched::policies {
namespace {

class RandomChoice final : public PlacementPolicy {
 public:
  explicit RandomChoice(std::uint64_t seed) : random_(seed) {}
  std::string_view name() const override { return "random"; }
  std::optional<std::size_t> choose(const PlacementRequest&, Stage,
                                    std::span<const Candidate> candidates) override {
    return static_cast<std::size_t>(random_.next_u64() % candidates.size());
  }

 private:
  SeededRandom random_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_random(std::uint64_t seed) {
  return std::make_unique<RandomChoice>(seed);
}

}  // namespace omni::sched::policies
