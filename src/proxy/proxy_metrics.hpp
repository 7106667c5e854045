// omni-proxy's Prometheus metrics, named in vLLM's style (`omni_proxy:<what>_<unit>`). Every
// child is looked up once at start-up so the request path only touches atomics.
#pragma once

#include <array>
#include <string_view>

#include "omni/metrics/metrics.hpp"
#include "omni/proxy/lifecycle.hpp"

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
};
inline constexpr std::size_t kOutcomeCount = 7;
std::string_view outcome_name(RequestOutcome outcome) noexcept;

enum class RouteId : std::uint8_t { kCompletions, kChatCompletions };
inline constexpr std::size_t kRouteCount = 2;

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
  metrics::Counter* prefill_errors = nullptr;
  metrics::Counter* decode_errors = nullptr;
  metrics::Counter* relayed_events = nullptr;
  metrics::Counter* cancelled_legs = nullptr;
  // --chat-to-completions (chat_bridge.hpp): chat requests sent as completions, and the others
  // by the reason they stayed chat.
  metrics::Counter* chat_converted = nullptr;
  metrics::CounterFamily* chat_not_converted = nullptr;

  static Result<ProxyMetrics> create(metrics::Registry& registry);
};

// The pool a stage's time is charged to: "prefill", "decode" or "proxy".
std::string_view stage_pool(Stage stage) noexcept;

}  // namespace omni::proxy
