// What the proxy says in its log about what it decided (docs/operations.md, "What the log
// says"): every node health change with its reason, and request failures, retries and
// migrations summarised per kind — never one line per request, which under an incident would
// bury the log and cost as much as the requests.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/log/log.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {

// The debug line of a placement: "placed ticket 7 (decode, 412 prompt tokens, attempt 1) on
// B; weighed A {matched 0, outstanding 1200 tokens / 2 requests, ...}, B {...}".
std::string describe_placement(const Ticket& ticket, std::span<const PlacementInput> inputs,
                               std::size_t chosen);

// The log line of a health change: "node 10.0.0.1:8000 (prefill) ejected for 5s: consecutive
// failed requests".
std::string describe_health_change(const NodeSpec& node, NodeHealth from, NodeHealth to,
                                   HealthCause cause, Duration for_how_long);

// The families NodeEventLog writes to (docs/metrics.md).
struct NodeMetricFamilies {
  metrics::CounterFamily* health_changes = nullptr;  // {node, to}
  metrics::CounterFamily* legs = nullptr;            // {pool, node, outcome}
  metrics::HistogramFamily* leg_seconds = nullptr;   // {pool, node}
  metrics::HistogramFamily* queue_wait = nullptr;    // {band, cause}
  metrics::CounterFamily* shed = nullptr;            // {band, reason}
};
Result<NodeMetricFamilies> register_node_metrics(metrics::Registry& registry);

// The Scheduler's observer in the live proxy: health changes to the log and to
// omni_proxy_node_health_changes_total; every released lease to the per-node request counts and
// latency histogram; prefix lookups passed on to `next`. Called on the scheduler thread only.
class NodeEventLog final : public SchedulerObserver {
 public:
  explicit NodeEventLog(SchedulerObserver& next) : next_(next), logger_(log::get("proxy")) {}
  // `bands`: the configured traffic bands, for the band label (none: "default").
  void bind(NodeMetricFamilies families, std::vector<BandSpec> bands = {}) {
    families_ = families;
    set_bands(std::move(bands));
  }
  // On the scheduler thread (a reload posts it there).
  void set_bands(std::vector<BandSpec> bands) {
    bands_ = std::move(bands);
    waits_.clear();
  }
  void on_prefix_lookup(std::uint32_t matched_tokens) override {
    next_.on_prefix_lookup(matched_tokens);
  }
  void on_health_change(const NodeSpec& node, NodeHealth from, NodeHealth to, HealthCause cause,
                        Duration for_how_long) override;
  void on_release(const NodeSpec& node, Outcome outcome, Duration held) override;
  // At debug level: one line per placement with the policy's inputs for every candidate.
  bool wants_placements() const override;
  void on_placement(const Ticket& ticket, std::span<const PlacementInput> inputs,
                    std::size_t chosen) override;
  // Each cause's share of a ticket's wait to omni_proxy_queue_wait_seconds{band, cause} (only
  // the causes it waited for), and each shed ticket to omni_proxy_shed_total{band, reason}.
  void on_waited(const Ticket& ticket, const WaitTimes& waited) override;
  void on_shed(const Ticket& ticket, ShedReason reason) override;

 private:
  // One node's series, looked up in the families once (a family lookup takes a lock and builds
  // a key; a release happens for every leg).
  struct NodeSeries {
    std::array<metrics::Counter*, 3> legs{};  // by Outcome
    metrics::Histogram* seconds = nullptr;
  };
  NodeSeries* series(const NodeSpec& node);

  SchedulerObserver& next_;
  // Held: wants_placements() asks its level on every placement (log::get takes a lock).
  std::shared_ptr<spdlog::logger> logger_;
  NodeMetricFamilies families_;
  std::map<std::pair<std::string, Role>, NodeSeries> series_;
  std::vector<BandSpec> bands_;
  // Per band, per cause: the wait histogram's child, looked up once.
  std::map<std::pair<std::uint8_t, std::size_t>, metrics::Histogram*> waits_;
};

// At most one line per kind per interval: the first occurrence of a kind is said at once, the
// ones after it within the interval are counted and said together when the next one arrives
// after the interval ("12 more in the last 10s"). Thread-safe; time injected.
class ThrottledEvents {
 public:
  explicit ThrottledEvents(Duration interval = std::chrono::seconds(10)) : interval_(interval) {}
  // The line to log now for one event of `kind` (with `detail`, e.g. the last error), or
  // nullopt when it is held back to be counted.
  std::optional<std::string> note(std::string_view kind, std::string_view detail, TimePoint now);

 private:
  struct Kind {
    TimePoint last_said{};
    std::uint64_t held = 0;  // events since last_said, not said
  };
  Duration interval_;
  std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_;
};

}  // namespace omni::proxy
