// The order in which the gateway core tries its waiting tickets when traffic classes are set
// (traffic.hpp): bands strict or weighted, tenants by start-time fair queuing (SFQ) inside each
// band, the policy's own order inside each tenant.
//
// SFQ keeps, per (band, tenant), the finish tag F of its last placed ticket and, per band, a
// virtual time V (the start tag of the last placement). A ticket's start tag is max(V, F) and
// it advances F by cost / weight. order() replays that tentatively over the queue to produce a
// pass's order; placed() commits it for the ticket actually placed, so the tags follow what
// was dispatched, not what was merely tried. A tenant that was idle restarts at V: no credit
// is saved up by staying away.
//
// Threading: single-threaded, inside the Scheduler.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "omni/proxy/traffic.hpp"

namespace omni::proxy {

class FairOrder {
 public:
  struct Entry {
    std::uint8_t band = 0;     // its effective band (after aging)
    std::uint32_t tenant = 0;  // 0: no tenant
    double weight = 1.0;       // the tenant's weight (> 0)
    double cost = 1.0;         // its token cost (> 0)
    double score = 0.0;        // the policy's queue score: lower goes first within a tenant
    std::size_t index = 0;     // the caller's reference, echoed in order()
  };

  FairOrder() = default;
  explicit FairOrder(const TrafficOptions& options) { configure(options); }
  void configure(const TrafficOptions& options);

  // Writes the entries' indexes into `out` in the order to try them. Reorders `entries`.
  void order(std::vector<Entry>& entries, std::vector<std::size_t>& out);
  // The ticket described by `entry` was placed: its tags advance.
  void placed(const Entry& entry);
  // SFQ's start tag of the next ticket of `key`: max(virtual time, its last finish tag).
  static double start_tag(double virtual_time, const std::unordered_map<std::uint32_t, double>& f,
                          std::uint32_t key);

 private:
  struct Tags {
    double virtual_time = 0.0;
    std::unordered_map<std::uint32_t, double> finish;  // per tenant
  };
  void prune(Tags& tags);

  BandOrder band_order_ = BandOrder::kStrict;
  std::vector<double> band_weights_;
  std::vector<Tags> bands_;          // per band: tenants' tags
  Tags between_bands_;               // weighted bands: the bands' tags
  std::vector<std::size_t> merged_;  // reused per pass
};

}  // namespace omni::proxy
