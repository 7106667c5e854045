// "least-outstanding": the default policy. Node choice by least outstanding tokens (load
// counted at dispatch), ties broken by fewer running requests, then by id, so the choice is
// deterministic. Queue order: shorter prompts first, with aging so long ones are not starved.
#include "policies.hpp"

namespace omni::proxy::policies {
namespace {

class LeastOutstanding final : public Policy {
 public:
  explicit LeastOutstanding(PolicyOptions options) : options_(options) {}
  std::string_view name() const noexcept override { return "least-outstanding"; }

  double queue_score(const TicketView& ticket, TimePoint now) const override {
    const double waited = std::chrono::duration<double>(now - ticket.enqueued).count();
    return options_.shortness_weight * static_cast<double>(ticket.prompt_tokens) -
           options_.aging_tokens_per_second * waited;
  }

  std::optional<std::size_t> pick(const TicketView&, std::span<const NodeView> candidates) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < candidates.size(); ++i) {
      if (better(candidates[i], candidates[best])) best = i;
    }
    return best;
  }

 private:
  static bool better(const NodeView& a, const NodeView& b) {
    if (a.load.outstanding_tokens != b.load.outstanding_tokens) {
      return a.load.outstanding_tokens < b.load.outstanding_tokens;
    }
    if (a.load.running != b.load.running) return a.load.running < b.load.running;
    return a.id < b.id;
  }

  PolicyOptions options_;
};

}  // namespace

std::unique_ptr<Policy> make_least_outstanding(PolicyOptions options) {
  return std::make_unique<LeastOutstanding>(options);
}

}  // namespace omni::proxy::policies
