#include "proxy_metrics.hpp"

namespace omni::proxy {
namespace {

std::vector<double> latency_buckets() {
  // 50 µs .. ~100 s: the proxy's own stages are microseconds, decoding is seconds.
  return metrics::exponential_buckets(50e-6, 2.0, 22);
}

Result<metrics::Histogram*> plain_histogram(metrics::Registry& registry, std::string_view name,
                                            std::string_view help) {
  auto family = registry.histogram(name, help, {}, latency_buckets());
  if (!family) return std::move(family).error();
  return (*family)->with({});
}

Result<metrics::Counter*> plain_counter(metrics::Registry& registry, std::string_view name,
                                        std::string_view help, std::string_view pool) {
  auto family = registry.counter(name, help, {"pool"});
  if (!family) return std::move(family).error();
  return (*family)->with({pool});
}

}  // namespace

std::string_view outcome_name(RequestOutcome outcome) noexcept {
  static constexpr std::array<std::string_view, kOutcomeCount> kNames = {
      "success", "client_error", "rejected", "timeout", "upstream_error", "stream_error",
      "client_disconnected"};
  return kNames[static_cast<std::size_t>(outcome)];
}

std::string_view stage_pool(Stage stage) noexcept {
  switch (stage) {
    case Stage::kWaitingPrefill:
    case Stage::kPrefillScheduled:
    case Stage::kPrefilling: return "prefill";
    case Stage::kWaitingDecode:
    case Stage::kDecodeScheduled:
    case Stage::kDecoding: return "decode";
    default: return "proxy";
  }
}

Result<ProxyMetrics> ProxyMetrics::create(metrics::Registry& registry) {
  ProxyMetrics m;
  auto requests = registry.counter("omni_proxy:requests_total",
                                   "Requests by route and their one final outcome.",
                                   {"route", "outcome"});
  if (!requests) return std::move(requests).error();
  constexpr std::array<std::string_view, kRouteCount> kRoutes = {"/v1/completions",
                                                                 "/v1/chat/completions"};
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    for (std::size_t o = 0; o < kOutcomeCount; ++o) {
      auto child = (*requests)->with({kRoutes[r], outcome_name(static_cast<RequestOutcome>(o))});
      if (!child) return std::move(child).error();
      m.requests[r][o] = *child;
    }
  }
  auto stages = registry.histogram("omni_proxy:request_stage_seconds",
                                   "Time a request spent in each lifecycle stage, by pool.",
                                   {"stage", "pool"}, latency_buckets());
  if (!stages) return std::move(stages).error();
  for (std::size_t s = 0; s < kStageCount; ++s) {
    const auto stage = static_cast<Stage>(s);
    auto child = (*stages)->with({stage_name(stage), stage_pool(stage)});
    if (!child) return std::move(child).error();
    m.stage_seconds[s] = *child;
  }
  struct H {
    metrics::Histogram** slot;
    std::string_view name;
    std::string_view help;
  };
  const H histograms[] = {
      {&m.ttft, "omni_proxy:time_to_first_token_seconds", "Request received to first output event."},
      {&m.tpot, "omni_proxy:time_per_output_token_seconds", "Mean time between output events."},
      {&m.e2e, "omni_proxy:e2e_request_latency_seconds", "Request received to its last byte."},
      {&m.scheduling_latency, "omni_proxy:scheduling_latency_seconds",
       "A worker's hand-over to the scheduler thread until its decision (queue wait included)."},
      {&m.scheduler_pass, "omni_proxy:scheduler_pass_seconds", "One pass of the scheduler."},
  };
  for (const H& h : histograms) {
    auto child = plain_histogram(registry, h.name, h.help);
    if (!child) return std::move(child).error();
    *h.slot = *child;
  }
  struct C {
    metrics::Counter** slot;
    std::string_view name;
    std::string_view help;
    std::string_view pool;
  };
  const C counters[] = {
      {&m.prefill_retries, "omni_proxy:retries_total", "Legs retried on another node.", "prefill"},
      {&m.decode_retries, "omni_proxy:retries_total", "Legs retried on another node.", "decode"},
      {&m.prefill_errors, "omni_proxy:upstream_errors_total", "Failed engine calls.", "prefill"},
      {&m.decode_errors, "omni_proxy:upstream_errors_total", "Failed engine calls.", "decode"},
      {&m.relayed_events, "omni_proxy:relayed_events_total", "SSE events relayed to clients.", "decode"},
      {&m.cancelled_legs, "omni_proxy:cancelled_legs_total",
       "Engine calls cancelled (client gone, or the other PD leg failed).", "any"},
  };
  for (const C& c : counters) {
    auto child = plain_counter(registry, c.name, c.help, c.pool);
    if (!child) return std::move(child).error();
    *c.slot = *child;
  }
  auto converted = registry.counter("omni_proxy:chat_converted_requests_total",
                                    "Chat requests sent to the engines as completions requests "
                                    "(--chat-to-completions).", {});
  if (!converted) return std::move(converted).error();
  auto converted_child = (*converted)->with({});
  if (!converted_child) return std::move(converted_child).error();
  m.chat_converted = *converted_child;
  auto not_converted = registry.counter("omni_proxy:chat_not_converted_requests_total",
                                        "Chat requests forwarded as chat under "
                                        "--chat-to-completions, by the reason.", {"reason"});
  if (!not_converted) return std::move(not_converted).error();
  m.chat_not_converted = *not_converted;
  return m;
}

}  // namespace omni::proxy
