// The last routing decisions, for GET /admin/decisions and the status page: which nodes each
// finished request went to, how it ended, how long it took. A bounded ring (the newest replace
// the oldest); one lock, taken once per request and per read. Recording copies a few strings
// and formats nothing: the time is formatted when the list is read.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "omni/proxy/traffic.hpp"

namespace omni::proxy {

// A wall time as the access log and /admin/decisions write it: ISO 8601, UTC, microseconds.
std::string iso_time(std::chrono::system_clock::time_point wall);

struct RoutingDecision {
  // When the request arrived; formatted (ISO 8601, UTC) only when the list is read.
  std::chrono::system_clock::time_point wall{};
  std::string request_id;
  std::string route;
  std::string prefill_node;  // empty: none (aggregated)
  std::string decode_node;
  int status = 0;
  std::string_view outcome;  // outcome_name(): static storage
  std::uint32_t retries = 0;
  std::uint32_t migrations = 0;
  double ttft_ms = -1;  // < 0: no first token
  double e2e_ms = 0;
  std::string band;    // empty: no traffic classes
  std::string tenant;  // empty: none
  std::int64_t priority = 0;
  std::array<double, kWaitCauses> waited_ms{};  // its queue time by WaitCause
};

// {"no_capacity": 71.2, ...}: the causes a request waited for (> 0 only), in ms.
boost::json::object waits_json(const std::array<double, kWaitCauses>& waited_ms);

class RecentDecisions {
 public:
  explicit RecentDecisions(std::size_t capacity = 50) : capacity_(capacity) {}
  void add(RoutingDecision decision);
  // Newest first, as JSON: {"decisions":[{...}, ...]}.
  std::string json() const;

 private:
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<RoutingDecision> ring_;
};

}  // namespace omni::proxy
