// "dynamo": NVIDIA Dynamo's KV router cost.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

// NVIDIA Dynamo's KV router cost: overlap_weight (1.0) x blocks still to prefill after the
// cached overlap + the worker's active (decode) blocks, lowest cost wins (temperature 0). The
// active blocks are the gateway's outstanding tokens in blocks.
class Dynamo final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "dynamo"; }
  bool uses_prefix_matches() const override { return true; }
  std::optional<std::size_t> choose(const PlacementRequest& request, Stage,
                                    std::span<const Candidate> candidates) override {
    const double bs = std::max<std::uint32_t>(1, request.block_size);
    return argmin(candidates, [&](const Candidate& c) {
      const double uncached =
          request.prompt_tokens - std::min(request.prompt_tokens, c.matched_tokens);
      const double prefill_blocks = std::ceil(uncached / bs);
      const double active_blocks = std::ceil(static_cast<double>(c.outstanding_tokens) / bs);
      return 1.0 * prefill_blocks + active_blocks;
    });
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> make_dynamo() { return std::make_unique<Dynamo>(); }

}  // namespace omni::sched::policies
