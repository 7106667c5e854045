// Per-tenant admission limits (docs/traffic.md): requests in flight at once, and a token
// bucket over prompt + completion tokens. Pure: time is passed in; the live proxy serialises
// calls (one mutex) and omni-cluster may drive the same object on its virtual clock.
//
// The bucket admits a request while it holds any tokens at all and then charges its prompt at
// once and its completion when it ends, so the bucket may go negative ("debt"): a long prompt
// is never refused for being longer than the bucket, and the average rate still holds, since
// the tenant waits until the debt is repaid. A refusal says when to retry: the time the
// bucket needs to be positive again (the Retry-After of the 429).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omni/common/clock.hpp"

namespace omni::proxy {

struct TenantLimit {
  std::uint32_t max_concurrency = 0;  // 0: none
  double tokens_per_second = 0;       // 0: none
  double burst_tokens = 0;            // 0: 10 s of tokens_per_second
};

struct TenantRefusal {
  std::string reason;   // "concurrency" or "tokens": the metric label
  std::string message;  // for the client's error body
  Duration retry_after{};
};

class TenantLimiter {
 public:
  // Limits by tenant id (index 0 is tenant 1; tenant 0 has none). Tenants that stay keep their
  // requests in flight and their bucket's level (clamped to a smaller new burst).
  void configure(std::vector<TenantLimit> limits, TimePoint now);
  // A request of `tenant` with `prompt_tokens` arrives: admitted (counted in flight, prompt
  // charged) or refused with the reason.
  std::optional<TenantRefusal> admit(std::uint32_t tenant, std::uint64_t prompt_tokens,
                                     TimePoint now);
  // An admitted request ended after generating `completion_tokens`.
  void finish(std::uint32_t tenant, std::uint64_t completion_tokens, TimePoint now);

  std::uint32_t in_flight(std::uint32_t tenant) const;
  double tokens(std::uint32_t tenant, TimePoint now) const;  // the bucket's level now

 private:
  struct State {
    TenantLimit limit;
    std::uint32_t in_flight = 0;
    double level = 0;  // tokens at `updated`
    TimePoint updated{};
  };
  static double burst(const TenantLimit& limit);
  static double level_at(const State& state, TimePoint now);
  State* find(std::uint32_t tenant);
  const State* find(std::uint32_t tenant) const;
  std::vector<State> states_;
};

}  // namespace omni::proxy
