// Traffic classes of a simulated workload: each request of the one workload belongs to one class,
// drawn from (seed, request id) by the classes' shares, and carries the class's band, tenant and
// tenant weight into every ticket it gives the gateway core (proxy::Ticket; the bands themselves
// are the core's, SchedulerOptions::traffic). A class is a share of the workload, not a stream of
// its own: "tenant A sends 10x tenant B" is two classes with shares 10 and 1 of a workload whose
// total rate is set; each class is then a Poisson thinning of the workload's arrivals.
//
// Also the parsers of omni-cluster's --traffic-bands and --traffic-classes (docs/omni-cluster.md),
// kept here so tests reach them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/proxy/traffic.hpp"

namespace omni::cluster {

struct TrafficClass {
  std::string name;
  double share = 1.0;        // relative: its part of the workload is share / sum of shares
  std::uint8_t band = 0;     // index into the gateway's bands (0: the most urgent)
  std::uint32_t tenant = 0;  // 0: none (no fair queuing between tenants)
  double tenant_weight = 1.0;
  double tenant_node_share = 1.0;  // the tenant's share of each node's thresholds
  friend bool operator==(const TrafficClass&, const TrafficClass&) = default;
};

// The class of request `id`: a hash of (seed, id) mapped to [0, 1) and looked up in the
// cumulative shares. Pure: the same arguments give the same class on any machine. `classes` must
// not be empty and its shares must be positive.
std::size_t class_of_request(const std::vector<TrafficClass>& classes, std::uint64_t seed,
                             std::uint64_t id) noexcept;

// "name:max_priority[:sheddable][:weight=W][:timeout=S][:max-waiting=N],..." most urgent first.
// max_priority must increase from band to band; names must be unique.
Result<std::vector<proxy::BandSpec>> parse_traffic_bands(std::string_view text);

// "name:share[:band=B][:tenant=T][:weight=W],...". B names one of `bands` (default: the band of
// priority 0, as a request without a priority gets in omni-proxy); T is a tenant's name, numbered
// 1, 2, ... in order of first appearance; W its weight in fair queuing (default 1; classes of one
// tenant must agree).
Result<std::vector<TrafficClass>> parse_traffic_classes(std::string_view text,
                                                        const std::vector<proxy::BandSpec>& bands);

}  // namespace omni::cluster
