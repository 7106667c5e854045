// What the traffic section (docs/traffic.md) decides for each request before it is queued: its
// tenant (from its API key), its priority (the header, else the body's `priority`, else the
// default; clamped to what its tenant may ask for) and so its band. Built from the
// configuration and the tenants' key files; replaced whole on reload.
//
// Threading: immutable after load(); shared by every I/O thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth.hpp"
#include "omni/common/result.hpp"
#include "omni/http/types.hpp"
#include "omni/proxy/config.hpp"
#include "omni/proxy/tenant_limits.hpp"

namespace omni::proxy {

struct RequestClass {
  std::uint8_t band = 0;
  std::uint32_t tenant = 0;  // 0: none
  double weight = 1.0;       // the tenant's, in fair queuing
  double node_share = 1.0;   // the tenant's share of each node's thresholds
  std::int64_t priority = 0;
  // The request asked for a more urgent priority than its tenant may: it got min_priority.
  bool clamped = false;
};

class TrafficRules {
 public:
  TrafficRules() = default;
  // Reads every tenant's key file: kNotFound/kIo naming it, kInvalidArgument for a key that
  // two tenants (or one twice) list.
  static Result<TrafficRules> load(const TrafficConfig& config);

  // kInvalidArgument when the priority header is not an integer in int32's range.
  Result<RequestClass> classify(const http::Headers& headers,
                                std::optional<std::int64_t> body_priority) const;
  // The tenant of a client key (constant time), 0 when it belongs to none.
  std::uint32_t tenant_of(std::string_view key) const;
  // "" for tenant 0.
  std::string_view tenant_name(std::uint32_t tenant) const;
  std::string_view band_name(std::uint8_t band) const;
  bool has_tenants() const noexcept { return !config_.tenants.empty(); }
  std::size_t tenant_count() const noexcept { return config_.tenants.size(); }
  std::size_t band_count() const noexcept { return std::max<std::size_t>(config_.bands.size(), 1); }
  std::vector<TenantLimit> limits() const;
  // Every tenant's keys: each is also a client API key.
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  const std::string& priority_header() const noexcept { return config_.priority_header; }

 private:
  TrafficConfig config_;
  std::vector<std::string> keys_;
  std::vector<std::uint32_t> key_tenant_;  // parallel to keys_
  Credentials credentials_;                // of keys_
};

}  // namespace omni::proxy
