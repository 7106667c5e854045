// "round-robin": a baseline. Candidates in turn by node id (the next id after the last
// chosen one, wrapping); FIFO queue.
#include "policies.hpp"

namespace omni::proxy::policies {
namespace {

class RoundRobin final : public Policy {
 public:
  std::string_view name() const noexcept override { return "round-robin"; }

  double queue_score(const TicketView& ticket, TimePoint) const override {
    return std::chrono::duration<double>(ticket.enqueued.time_since_epoch()).count();
  }

  std::optional<std::size_t> pick(const TicketView& ticket, std::span<const NodeView> candidates) override {
    std::uint32_t& last = ticket.role == Role::kPrefill ? last_prefill_ : last_decode_;
    std::optional<std::size_t> after;   // smallest id greater than last
    std::size_t lowest = 0;             // wrap-around
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const std::uint32_t id = candidates[i].id;
      if (id < candidates[lowest].id) lowest = i;
      if (id > last && (!after || id < candidates[*after].id)) after = i;
    }
    const std::size_t chosen = after.value_or(lowest);
    last = candidates[chosen].id;
    return chosen;
  }

 private:
  std::uint32_t last_prefill_ = UINT32_MAX;
  std::uint32_t last_decode_ = UINT32_MAX;
};

}  // namespace

std::unique_ptr<Policy> make_round_robin(PolicyOptions) { return std::make_unique<RoundRobin>(); }

}  // namespace omni::proxy::policies
