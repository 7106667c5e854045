// omni-proxy's Prometheus metrics, named in vLLM's style (`omni_proxy:<what>_<unit>`). Every
// child is looked up once at start-up so the request path only touches atomics.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string_view>

#include "omni/metrics/metrics.hpp"
#include "omni/proxy/lifecycle.hpp"
#include "omni/proxy/migration.hpp"

namespace omni::proxy {

// Exactly one per accepted request, in the access log and in requests_total.
enum class RequestOutcome : std::uint8_t {
  kSuccess,
  kClientError,         // 4xx: bad input, unauthorised, or the engine refused it
  kRejected,            // 429: the proxy queue is full
  kTimeout,             // waited too long for a node
  kUpstreamError,       // every attempt failed before the client saw a byte
  kStreamError,         // the engine failed after streaming started (error event + [DONE])
  kClientDisconnected,  // the client went away; the engine calls were cancelled
  kClientTooSlow,       // the client stopped reading for longer than timeouts.client_write
};
inline constexpr std::size_t kOutcomeCount = 8;
std::string_view outcome_name(RequestOutcome outcome) noexcept;

// Bounds of the proxy's latency histograms: exponential from 50 µs to ~100 s, plus the round
// SLO values 0.1, 0.25, 0.5, 1, 2, 5, 10, 30 and 60 s.
std::vector<double> latency_buckets();

enum class RouteId : std::uint8_t { kCompletions, kChatCompletions };
inline constexpr std::size_t kRouteCount = 2;

// Every response the proxy sends, by route and HTTP status, whoever produced it (a handler,
// the router's 404/405, or the HTTP server's own refusals): omni_proxy_http_responses_total.
// The route label is one of a fixed set, so its cardinality is bounded; each (route, status)
// child is looked up once, then updated lock-free.
enum class RouteLabel : std::uint8_t {
  kCompletions,
  kChatCompletions,
  kModels,
  kHealth,
  kReady,
  kMetrics,
  kAdmin,
  kOther,
  kUnparsed,  // refused before the request line was read
};
inline constexpr std::size_t kRouteLabelCount = 9;
RouteLabel route_label(std::string_view path) noexcept;
std::string_view route_label_name(RouteLabel route) noexcept;

class ResponseCounter {
 public:
  explicit ResponseCounter(metrics::CounterFamily* family = nullptr) : family_(family) {}
  void count(RouteLabel route, int status);

 private:
  static constexpr int kFirst = 100;
  static constexpr int kStatuses = 500;  // 100..599
  metrics::CounterFamily* family_;
  std::array<std::array<std::atomic<metrics::Counter*>, kStatuses>, kRouteLabelCount> children_{};
};

struct ProxyMetrics {
  std::array<std::array<metrics::Counter*, kOutcomeCount>, kRouteCount> requests{};
  std::array<metrics::Histogram*, kStageCount> stage_seconds{};
  metrics::Histogram* ttft = nullptr;
  metrics::Histogram* tpot = nullptr;
  metrics::Histogram* e2e = nullptr;
  metrics::Histogram* scheduling_latency = nullptr;
  metrics::Histogram* scheduler_pass = nullptr;
  metrics::Counter* prefill_retries = nullptr;
  metrics::Counter* decode_retries = nullptr;
  metrics::Counter* kv_redos = nullptr;  // sequential PD: prefill and decode redone (lost KV)
  metrics::Counter* prefill_errors = nullptr;
  metrics::Counter* decode_errors = nullptr;
  metrics::Counter* relayed_events = nullptr;
  metrics::Counter* cancelled_legs = nullptr;
  metrics::Counter* tls_handshake_failures = nullptr;  // connections closed without HTTP
  // --chat-to-completions (chat_bridge.hpp): chat requests sent as completions, and the others
  // by the reason they stayed chat.
  metrics::Counter* chat_converted = nullptr;
  metrics::CounterFamily* chat_not_converted = nullptr;
  // Mid-stream migrations (migration.hpp) by cause and outcome: [cause][0] completed, [1] failed
  // (the continuation broke too, or no engine could take it).
  std::array<std::array<metrics::Counter*, 2>, kMigrationCauseCount> migrations{};
  // The fleet sync (fleet_sync.hpp): messages by direction and kind, and those dropped.
  metrics::CounterFamily* fleet_messages = nullptr;
  metrics::CounterFamily* fleet_dropped = nullptr;
  // Client-supplied PD fields (kv_transfer_params, bootstrap_*) stripped or refused.
  metrics::CounterFamily* client_pd_fields = nullptr;
  // Engine failures by node and kind (count_node_error in call.hpp): {pool, node, kind}.
  metrics::CounterFamily* node_errors = nullptr;
  // Traffic management (docs/traffic.md): requests by band and tenant, tenants' requests refused
  // by their limits {tenant, reason}, and priorities clamped to what a tenant may ask {tenant}.
  metrics::CounterFamily* class_requests = nullptr;
  metrics::CounterFamily* tenant_rejected = nullptr;
  metrics::CounterFamily* priority_clamped = nullptr;
  // Shared: the array of children is large and its address is taken by the hooks.
  std::shared_ptr<ResponseCounter> responses;

  static Result<ProxyMetrics> create(metrics::Registry& registry);
};

// The pool a stage's time is charged to: "prefill", "decode" or "proxy".
std::string_view stage_pool(Stage stage) noexcept;

}  // namespace omni::proxy
