#include "omni/proxy/tenant_limits.hpp"

#include <algorithm>

namespace omni::proxy {

double TenantLimiter::burst(const TenantLimit& limit) {
  return limit.burst_tokens > 0 ? limit.burst_tokens : 10.0 * limit.tokens_per_second;
}

double TenantLimiter::level_at(const State& state, TimePoint now) {
  if (state.limit.tokens_per_second <= 0) return 0;
  const double elapsed = std::chrono::duration<double>(now - state.updated).count();
  return std::min(burst(state.limit),
                  state.level + std::max(elapsed, 0.0) * state.limit.tokens_per_second);
}

void TenantLimiter::configure(std::vector<TenantLimit> limits, TimePoint now) {
  std::vector<State> next(limits.size());
  for (std::size_t i = 0; i < limits.size(); ++i) {
    next[i].limit = limits[i];
    next[i].updated = now;
    if (i < states_.size()) {
      next[i].in_flight = states_[i].in_flight;
      next[i].level = std::min(level_at(states_[i], now), burst(limits[i]));
      if (states_[i].limit.tokens_per_second <= 0) next[i].level = burst(limits[i]);
    } else {
      next[i].level = burst(limits[i]);
    }
  }
  states_ = std::move(next);
}

TenantLimiter::State* TenantLimiter::find(std::uint32_t tenant) {
  return tenant == 0 || tenant > states_.size() ? nullptr : &states_[tenant - 1];
}

const TenantLimiter::State* TenantLimiter::find(std::uint32_t tenant) const {
  return tenant == 0 || tenant > states_.size() ? nullptr : &states_[tenant - 1];
}

std::optional<TenantRefusal> TenantLimiter::admit(std::uint32_t tenant, std::uint64_t prompt_tokens,
                                                  TimePoint now) {
  State* state = find(tenant);
  if (state == nullptr) return std::nullopt;
  const TenantLimit& limit = state->limit;
  if (limit.max_concurrency > 0 && state->in_flight >= limit.max_concurrency) {
    return TenantRefusal{"concurrency",
                         "too many concurrent requests: this key's tenant may have " +
                             std::to_string(limit.max_concurrency) + " in flight",
                         std::chrono::seconds(1)};
  }
  if (limit.tokens_per_second > 0) {
    const double level = level_at(*state, now);
    if (level <= 0) {
      const double wait_s = std::max(-level / limit.tokens_per_second, 0.001);
      return TenantRefusal{
          "tokens",
          "token rate limit exceeded: this key's tenant may use " +
              std::to_string(static_cast<std::uint64_t>(limit.tokens_per_second)) +
              " tokens per second",
          std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait_s))};
    }
    state->level = level - static_cast<double>(prompt_tokens);
    state->updated = now;
  }
  ++state->in_flight;
  return std::nullopt;
}

void TenantLimiter::finish(std::uint32_t tenant, std::uint64_t completion_tokens, TimePoint now) {
  State* state = find(tenant);
  if (state == nullptr) return;
  if (state->in_flight > 0) --state->in_flight;
  if (state->limit.tokens_per_second > 0) {
    state->level = level_at(*state, now) - static_cast<double>(completion_tokens);
    state->updated = now;
  }
}

std::uint32_t TenantLimiter::in_flight(std::uint32_t tenant) const {
  const State* state = find(tenant);
  return state == nullptr ? 0 : state->in_flight;
}

double TenantLimiter::tokens(std::uint32_t tenant, TimePoint now) const {
  const State* state = find(tenant);
  return state == nullptr ? 0 : level_at(*state, now);
}

}  // namespace omni::proxy
