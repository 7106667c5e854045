// "omni": ours — earliest predicted prefill finish, sequence balancing, LPT decode queue.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common.hpp"

namespace omni::sched::policies {
namespace {

// Ours: place each prompt where it will finish first. Its predicted finish on a node is (the
// node's queued work + its own work + the capacity its uncached tokens take from others) / the
// node's speed, where cached context still costs a little (attention reads it) and the capacity
// term weighs more as the pool gets busy. Ties prefer the deeper cache match. A long prompt
// avoids nodes that already queue long prompts (sequence balancing). When every node's queue
// already holds more than `max_queue_seconds` of work the request waits in the gateway, where
// shorter prompts go first but every second of waiting counts as `aging` tokens of shortness.
// The speed is nominal unless `learn` asks to learn it per node from what the gateway sees;
// a learned speed is relative (a node's own over the pool's mean, times the nominal speed), so
// that the hold bound keeps its meaning in nominal seconds whatever the pool measures.
// Decode: the least loaded node of the group with the KV transfer counted, nodes nearly out of
// KV avoided; when all are over their limits and the caller can hold, longest first.
struct OmniTuning {
  double cache_weight = 1.0;       // extra weight of uncached work over queue wait, pool busy
  double idle_cache_weight = 0.5;  // the same on an idle pool (interpolated by mean queue)
  double max_queue_seconds = 1.5;  // hold at the gateway when every node has more queued
  double aging_tokens_per_second = 4096;
  // 0: every node at the nominal speed; 1: per-node speed, mean of per-completion samples;
  // 2: per-node speed, smoothed tokens over smoothed busy time.
  double learn = 0.0;
  double shrink_samples = 200;  // samples at which a node's own speed gets half the weight
  // A learned speed within this fraction of the pool's mean counts as the pool's: in a pool of
  // equal engines the measured differences are noise (completions arrive in clumps), while an
  // engine really slower or faster (another GPU, a degraded one) lies well outside it.
  double speed_band = 0.25;
  double context_weight = 0.1;  // cost of a cached prompt token relative to an uncached one
  double request_tokens = 0.0;  // fixed cost of one queued request, in uncached tokens
  // Sequence balancing: a long prompt (uncached >= kLongPrefillTokens) placed behind other long
  // ones pays this fraction of its own prefill time once per long prompt queued there.
  double sequence_balance = 1.0;
  // Decode.
  double decode_kv_limit = 0.92;      // a decode node this full (or with requests waiting) is over
  double decode_output_weight = 1.0;  // alpha: weight of expected output tokens in LPT order
  double decode_aging_tokens_per_second = 4096;
};

// Decode node choice: the least outstanding tokens (what its KV will hold), a node nearly out of
// KV charged steeply, each running sequence as a little work, and the KV transfer from the
// prefill node as the tokens a decode node serves in that time.
double decode_cost(const Candidate& c, const OmniTuning& tuning) {
  constexpr double kPressureStart = 0.85, kPressureSlope = 20.0;
  constexpr double kTokensPerRunning = 1.0;
  constexpr double kTransferTokensPerSecond = 100000.0;
  const double limit = std::min(kPressureStart, tuning.decode_kv_limit);
  const double pressure = std::max(0.0, c.kv_usage - limit) * kPressureSlope;
  return static_cast<double>(c.outstanding_tokens) * (1.0 + pressure) +
         kTokensPerRunning * c.running + kTransferTokensPerSecond * c.kv_transfer_seconds;
}

// A decode node that should take nothing more for now: its KV is nearly full, or its engine
// already has requests it could not admit.
bool decode_over(const Candidate& c, const OmniTuning& tuning) {
  return c.kv_usage >= tuning.decode_kv_limit || c.waiting > 0;
}

class Omni final : public PlacementPolicy {
 public:
  Omni(std::string name, OmniTuning tuning) : name_(std::move(name)), tuning_(tuning) {}
  std::string_view name() const override { return name_; }
  bool uses_prefix_matches() const override { return true; }
  std::optional<std::size_t> choose(const PlacementRequest& request, Stage stage,
                                    std::span<const Candidate> candidates) override {
    if (stage == Stage::kDecode) return choose_decode(request, candidates);
    return choose_prefill(request, stage, candidates);
  }
  // Prefill: shortest first, every second waited worth `aging` tokens of shortness. Decode:
  // longest processing time first (prompt + alpha x expected output: the KV it will hold and
  // the steps it will take), with the same kind of aging, so that big requests are packed
  // while room is free and the small ones fill the gaps.
  double queue_score(const PlacementRequest& r) const override {
    const double waited = r.now - r.arrival;
    if (r.stage == Stage::kDecode) {
      const double work = r.prompt_tokens + tuning_.decode_output_weight * r.max_output_tokens;
      return -work - tuning_.decode_aging_tokens_per_second * waited;
    }
    return r.prompt_tokens - tuning_.aging_tokens_per_second * waited;
  }
  void observe_prefill(InstanceId instance, std::uint64_t tokens, double busy_seconds) override {
    if (busy_seconds < 0 || tokens == 0 || tuning_.learn == 0.0) return;
    if (instance >= speed_.size()) {
      speed_.resize(instance + 1, 0.0);
      samples_.resize(instance + 1, 0);
      tokens_seen_.resize(instance + 1, 0.0);
      busy_seen_.resize(instance + 1, 0.0);
    }
    double sample = 0.0;
    if (tuning_.learn >= 2.0) {
      // Tokens over busy time, both smoothed: a clump of completions at one instant adds its
      // tokens to the interval that produced them instead of being dropped.
      tokens_seen_[instance] =
          (1 - kSpeedSmoothing) * tokens_seen_[instance] + static_cast<double>(tokens);
      busy_seen_[instance] = (1 - kSpeedSmoothing) * busy_seen_[instance] + busy_seconds;
      if (busy_seen_[instance] <= 0) return;
      sample = tokens_seen_[instance] / busy_seen_[instance];
    } else {
      if (busy_seconds <= 0) return;
      sample = static_cast<double>(tokens) / busy_seconds;
    }
    double& s = speed_[instance];
    if (s == 0.0) ++known_;
    speed_sum_ -= s;
    if (tuning_.learn >= 2.0) {
      s = sample;
    } else {
      s = s == 0.0 ? sample : (1 - kSpeedSmoothing) * s + kSpeedSmoothing * sample;
    }
    speed_sum_ += s;
    ++samples_[instance];
  }

 private:
  std::optional<std::size_t> choose_decode(const PlacementRequest& request,
                                           std::span<const Candidate> candidates) const {
    const bool all_over = std::all_of(candidates.begin(), candidates.end(),
                                      [&](const Candidate& c) { return decode_over(c, tuning_); });
    if (all_over && request.decode_may_wait) return std::nullopt;
    // Equal costs (an idle pool) go to the node that took the fewest so far, not always the first.
    return argmin(candidates, [&](const Candidate& c) {
      return std::pair(decode_cost(c, tuning_), c.dispatched);
    });
  }

  // Hold at the gateway only when every node already has more queued work than the bound;
  // otherwise the earliest predicted finish wins, even on a busy node whose cache saves more
  // than its queue costs; equal finishes go to the deeper match, then to the first candidate.
  std::optional<std::size_t> choose_prefill(const PlacementRequest& request, Stage stage,
                                            std::span<const Candidate> candidates) {
    finish_.resize(candidates.size());
    queued_.resize(candidates.size());
    double least_queued = std::numeric_limits<double>::infinity(), total_queued = 0.0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      queued_[i] = queued_work(candidates[i], stage) / speed_of(candidates[i].instance);
      least_queued = std::min(least_queued, queued_[i]);
      total_queued += queued_[i];
    }
    const bool any_open = least_queued <= tuning_.max_queue_seconds;
    const double mean_queued = total_queued / static_cast<double>(candidates.size());
    // The capacity a request's uncached work takes from everyone else matters as much as the
    // pool is busy: on an idle pool only its own finish counts, on a pool whose every node has
    // queued work a cache hit is worth more than the wait it avoids.
    const double busy = tuning_.max_queue_seconds > 0
                            ? std::min(1.0, mean_queued / tuning_.max_queue_seconds)
                            : 1.0;
    const double cache_weight =
        tuning_.idle_cache_weight + (tuning_.cache_weight - tuning_.idle_cache_weight) * busy;
    double best_finish = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      const double speed = speed_of(c.instance);
      const double cached = std::min(request.prompt_tokens, c.matched_tokens);
      const double uncached = request.prompt_tokens - cached;
      const double own = uncached + tuning_.context_weight * cached + tuning_.request_tokens;
      finish_[i] = queued_[i] + (own + cache_weight * uncached) / speed;
      if (uncached >= kLongPrefillTokens) {
        finish_[i] += tuning_.sequence_balance * c.queued_long_prefills * uncached / speed;
      }
      best_finish = std::min(best_finish, finish_[i]);
    }
    if (!any_open) return std::nullopt;
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (finish_[i] > best_finish + 1e-9) continue;
      if (!best || deeper_or_fresher(candidates[i], candidates[*best])) best = i;
    }
    return best;
  }
  // Among equal finishes: the deeper match, then the node that took the fewest requests so far
  // (ties always to the first node would pile every isolated request onto one engine).
  static bool deeper_or_fresher(const Candidate& a, const Candidate& b) {
    if (a.matched_tokens != b.matched_tokens) return a.matched_tokens > b.matched_tokens;
    return a.dispatched < b.dispatched;
  }
  // A node's queued prefill work in uncached-token equivalents: the uncached tokens, plus what
  // the cached context of those prompts still costs (attention reads it), plus a fixed cost per
  // request (each is one more sequence in the batch). Only a PD prefill node's outstanding
  // tokens are prompts not yet prefilled; an aggregated node's include running decodes and
  // their outputs, so there the cached context is not known and not charged.
  double queued_work(const Candidate& c, Stage stage) const {
    const double uncached = static_cast<double>(c.queued_prefill_tokens);
    const double cached = stage == Stage::kPrefill
                              ? std::max(0.0, static_cast<double>(c.outstanding_tokens) - uncached)
                              : 0.0;
    return uncached + tuning_.context_weight * cached +
           tuning_.request_tokens * c.outstanding_requests;
  }

  // A node's own estimate, shrunk towards the pool's mean until it rests on many samples:
  // completions arrive in clumps (a batch finishes several prompts at once), so a few samples
  // of one node are noise, while a real speed difference between nodes persists and wins out.
  // A node within `speed_band` of the pool counts as the pool.
  double speed_of(InstanceId instance) const {
    const double own = instance < speed_.size() ? speed_[instance] : 0.0;
    const double pool = pool_speed();
    if (own <= 0) return pool;
    const double mean = speed_sum_ / known_;  // what the gateway measures, over the pool
    const double n = static_cast<double>(samples_[instance]);
    const double trust = n / (n + tuning_.shrink_samples);
    const double relative = (trust * own + (1 - trust) * mean) / mean;
    if (std::abs(relative - 1.0) <= tuning_.speed_band) return pool;
    return pool * relative;
  }
  // The pool's speed: the nominal one unless what the gateway measures is clearly another (more
  // than `kPoolSpeedFactor` away: engines of another size or model, a sped-up simulator). The
  // hold bound is tuned in nominal seconds, and a measurement near them is mostly noise from
  // the mix of cached and uncached work.
  double pool_speed() const {
    if (known_ == 0) return kNominalSpeed;
    const double measured = speed_sum_ / known_;
    const bool near = measured <= kNominalSpeed * kPoolSpeedFactor &&
                      measured * kPoolSpeedFactor >= kNominalSpeed;
    return near ? kNominalSpeed : measured;
  }
  static constexpr double kPoolSpeedFactor = 2.0;
  static constexpr double kSpeedSmoothing = 0.05;
  static constexpr double kNominalSpeed = 8000;  // tokens/s
  std::string name_;
  OmniTuning tuning_;
  std::vector<double> speed_;  // per node, tokens/s; 0 until observed
  std::vector<std::uint64_t> samples_;
  std::vector<double> tokens_seen_, busy_seen_;  // per node, smoothed sums (learn=2)
  std::vector<double> finish_, queued_;          // scratch: per candidate, seconds
  double speed_sum_ = 0.0;
  int known_ = 0;
};

// "omni" or "omni:cache=2:hold=3:aging=4096": the tunables by name, for experiments.
Result<OmniTuning> parse_omni_tuning(std::string_view name) {
  OmniTuning tuning;
  std::string_view rest = name.substr(std::min(name.size(), std::string_view("omni").size()));
  while (!rest.empty()) {
    rest.remove_prefix(1);  // ':'
    const std::string_view item = rest.substr(0, rest.find(':'));
    rest.remove_prefix(item.size());
    const auto eq = item.find('=');
    const std::string key(item.substr(0, eq));
    double value = 0;
    try {
      value = eq == std::string_view::npos ? -1 : std::stod(std::string(item.substr(eq + 1)));
    } catch (const std::exception&) {
      value = -1;
    }
    if (value < 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "omni policy: '" + std::string(item) + "' is not key=non-negative number");
    }
    if (key == "cache") {
      tuning.cache_weight = value;
    } else if (key == "hold") {
      tuning.max_queue_seconds = value;
    } else if (key == "aging") {
      tuning.aging_tokens_per_second = value;
    } else if (key == "learn") {
      tuning.learn = value;
    } else if (key == "band") {
      tuning.speed_band = value;
    } else if (key == "shrink") {
      tuning.shrink_samples = value;
    } else if (key == "ctx") {
      tuning.context_weight = value;
    } else if (key == "req") {
      tuning.request_tokens = value;
    } else if (key == "idlecache") {
      tuning.idle_cache_weight = value;
    } else if (key == "seqbal") {
      tuning.sequence_balance = value;
    } else if (key == "dkv") {
      tuning.decode_kv_limit = value;
    } else if (key == "dalpha") {
      tuning.decode_output_weight = value;
    } else if (key == "daging") {
      tuning.decode_aging_tokens_per_second = value;
    } else {
      return make_error(
          ErrorCode::kInvalidArgument,
          "omni policy: unknown setting '" + key +
              "' (cache, idlecache, hold, aging, learn, band, shrink, ctx, req, seqbal, "
              "dkv, dalpha, daging)");
    }
  }
  return tuning;
}

}  // namespace

Result<std::unique_ptr<PlacementPolicy>> make_omni(std::string_view spec,
                                                   const PolicySettings& settings) {
  auto tuning = parse_omni_tuning(spec);
  if (!tuning) return std::move(tuning).error();
  // The node speed is a visible setting of both binaries (PolicySettings::node_speed), not a
  // silent rename; an explicit learn= in the spec wins.
  if (spec.find("learn=") == std::string_view::npos) {
    tuning->learn = settings.node_speed == NodeSpeed::kLearned ? 2.0 : 0.0;
  }
  return std::unique_ptr<PlacementPolicy>(new Omni(std::string(spec), *tuning));
}

}  // namespace omni::sched::policies
