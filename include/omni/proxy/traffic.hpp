// Traffic classes of the gateway core (docs/traffic.md): priority bands, tenants and why a
// request waited. Pure data; the Scheduler applies it, omni-proxy fills it from its
// configuration and omni-cluster from a workload's class mix, so both run the same rules.
//
// Bands: a request's priority (vLLM's `priority` field: lower is more urgent, default 0) picks
// the first band whose max_priority is at least it; the last band takes every larger value.
// In the wait queue the bands are strict (an urgent ticket always goes first) or weighted (each
// band gets a share of the placements by its weight, start-time fair queuing between bands);
// either way a ticket that waited `aging` rises one band, so nothing starves. A sheddable band
// is given up first under overload: when the queue is full, its newest waiting ticket makes
// room for a more urgent one, it may hold at most max_waiting tickets, and it may have a
// shorter queue timeout.
//
// Fair drop: when the queue is full and nothing sheddable and less urgent can make room, the
// newest ticket of the tenant holding the most of the incoming ticket's band (per weight) gives
// its place up, if that tenant holds more than the newcomer's would with it: a tenant that
// floods the queue cannot lock the others out of it.
//
// Tenants: inside a band, tickets of different tenants are ordered by start-time fair queuing
// (Goyal, Vin and Cheng, 1996) on their token cost divided by the tenant's weight; inside one
// tenant the policy's own order holds. Bound (tested): for two tenants that stay backlogged,
// the work each got, divided by its weight, differs at any moment by at most one largest
// ticket of each (cost_max_i / w_i + cost_max_j / w_j).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"

namespace omni::proxy {

struct BandSpec {
  std::string name;
  // Requests with a priority up to this value (and above the previous band's) land here; the
  // last band takes everything above.
  std::int64_t max_priority = 0;
  double weight = 1.0;     // BandOrder::kWeighted: its share of placements
  bool sheddable = false;  // given up first under overload
  // How long its tickets may wait; 0: the scheduler's queue_timeout.
  Duration queue_timeout{};
  // Sheddable bands: more waiting tickets than this are refused at submit; 0: no bound of its own.
  std::size_t max_waiting = 0;
  // Its tickets see each node's thresholds scaled by this (0, 1]: a less urgent band kept below
  // 1 leaves the rest of every node to the more urgent ones, which then need not wait for a
  // slot (headroom). An idle node still takes one.
  double node_share = 1.0;
  friend bool operator==(const BandSpec&, const BandSpec&) = default;
};

enum class BandOrder : std::uint8_t { kStrict, kWeighted };
std::string_view band_order_name(BandOrder order) noexcept;

struct TrafficOptions {
  // Most urgent first. Empty: one band, named "default", holding every priority.
  std::vector<BandSpec> bands;
  BandOrder order = BandOrder::kStrict;
  // A waiting ticket rises one band per `aging` waited (0s: never).
  Duration aging = std::chrono::seconds(10);
};

// At most this many bands (a ticket's band is a byte; more bands than this help nobody).
inline constexpr std::size_t kMaxBands = 16;
// The one check of a band list, for omni-proxy's configuration and omni-cluster's flag alike:
// at most kMaxBands, unique non-empty names, max_priority growing (most urgent first), weight
// > 0 and node_share in (0, 1]. kInvalidArgument naming the band.
Status valid_bands(const std::vector<BandSpec>& bands);

// The band of a priority under `bands` (0 when there are none).
std::uint8_t band_of_priority(const std::vector<BandSpec>& bands, std::int64_t priority) noexcept;
// The name of band `band` ("default" when there are no bands).
std::string_view band_name(const std::vector<BandSpec>& bands, std::uint8_t band) noexcept;

// Why a ticket waited in the queue, pass by pass (Decision::waited).
enum class WaitCause : std::uint8_t {
  kNoCapacity,  // no node could take it: every one over its thresholds, down or draining
  kPolicyHold,  // the policy held it (it predicted a better moment)
  kPriority,    // a more urgent band's ticket that could not go stood before it
  kQueueOrder,  // a ticket of its own band stood before it (policy order, tenant fairness)
};
inline constexpr std::size_t kWaitCauses = 4;
std::string_view wait_cause_name(WaitCause cause) noexcept;
using WaitTimes = std::array<Duration, kWaitCauses>;

}  // namespace omni::proxy
