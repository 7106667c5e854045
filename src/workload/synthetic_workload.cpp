// The synthetic workload: new sessions by a Poisson or gamma process, later turns from a heap
// of open sessions (memory proportional to the sessions still open).
#include <algorithm>
#include <vector>

#include "omni/workload/synthetic.hpp"

namespace omni::workload {
namespace {

struct OpenSession {
  double next_arrival_s = 0.0;
  std::uint64_t id = 0;
  std::uint32_t turn = 0;
  std::uint32_t turns = 1;
  std::uint32_t own_tokens = 0;    // the session's prompt after the system prefix
  std::vector<std::uint64_t> ids;  // block ids of those tokens, grown on demand
};

// Min-heap order on (arrival, session id): deterministic even when arrivals tie.
bool later(const OpenSession& a, const OpenSession& b) {
  if (a.next_arrival_s != b.next_arrival_s) return a.next_arrival_s > b.next_arrival_s;
  return a.id > b.id;
}

class SyntheticWorkload final : public Workload {
 public:
  SyntheticWorkload(const SyntheticSpec& spec, std::uint64_t seed) : spec_(spec), rng_(seed) {
    system_ids_.resize(spec_.system_tokens / kBlockTokens);
    for (auto& id : system_ids_) id = next_id_++;
  }

  Result<std::optional<RequestSpec>> next() override {
    if (emitted_ >= spec_.requests) return std::optional<RequestSpec>{};
    OpenSession session;
    if (!open_.empty() && open_.front().next_arrival_s <= next_session_s_) {
      std::pop_heap(open_.begin(), open_.end(), later);
      session = std::move(open_.back());
      open_.pop_back();
    } else {
      session = start_session();
    }
    RequestSpec spec = emit_turn(session);
    if (session.turn < session.turns) {
      open_.push_back(std::move(session));
      std::push_heap(open_.begin(), open_.end(), later);
    }
    return std::optional{std::move(spec)};
  }

 private:
  OpenSession start_session() {
    OpenSession s;
    s.next_arrival_s = next_session_s_;
    s.id = next_session_id_++;
    s.turns = spec_.turns.sample(rng_);
    s.own_tokens = spec_.input.sample(rng_);
    next_session_s_ += spec_.arrival == SyntheticSpec::Arrival::kGamma
                           ? gamma_gap(rng_, spec_.rate, spec_.cv)
                           : rng_.exponential(spec_.rate);
    return s;
  }

  // The request for the session's current turn; advances the session to its next turn.
  RequestSpec emit_turn(OpenSession& s) {
    RequestSpec spec;
    spec.index = emitted_++;
    spec.arrival_s = s.next_arrival_s;
    const std::uint64_t total = std::uint64_t{system_ids_.size()} * kBlockTokens + s.own_tokens;
    spec.input_tokens = static_cast<std::uint32_t>(std::min<std::uint64_t>(total, kMaxSpecTokens));
    spec.max_output_tokens = spec_.output.sample(rng_);
    const std::size_t blocks = blocks_for(spec.input_tokens);
    spec.hash_ids.assign(system_ids_.begin(), system_ids_.end());
    spec.hash_ids.resize(std::min(blocks, spec.hash_ids.size()));
    while (s.ids.size() + spec.hash_ids.size() < blocks) s.ids.push_back(next_id_++);
    for (std::size_t i = 0; spec.hash_ids.size() < blocks; ++i) spec.hash_ids.push_back(s.ids[i]);
    spec.session = SessionInfo{s.id, s.turn, s.turns};
    // The next turn repeats this prompt, this turn's answer and a new user message.
    const std::uint64_t grown =
        std::uint64_t{s.own_tokens} + spec.max_output_tokens + spec_.user.sample(rng_);
    s.own_tokens = static_cast<std::uint32_t>(std::min<std::uint64_t>(grown, kMaxSpecTokens));
    s.next_arrival_s += spec_.think_s;
    ++s.turn;
    return spec;
  }

  SyntheticSpec spec_;
  SeededRandom rng_;
  std::vector<std::uint64_t> system_ids_;
  std::vector<OpenSession> open_;  // a heap ordered by `later`
  double next_session_s_ = 0.0;
  std::uint64_t next_session_id_ = 0;
  std::uint64_t next_id_ = kGeneratedIdBase;
  std::uint64_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_synthetic_workload(const SyntheticSpec& spec, std::uint64_t seed) {
  return std::make_unique<SyntheticWorkload>(spec, seed);
}

}  // namespace omni::workload
