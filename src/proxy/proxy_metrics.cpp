#include "proxy_metrics.hpp"

#include <algorithm>

namespace omni::proxy {

std::vector<double> latency_buckets() {
  // 50 µs .. ~100 s: the proxy's own stages are microseconds, decoding is seconds. Plus the
  // round values SLOs are written in, so that "TTFT under 2 s" is a bucket, not an estimate.
  std::vector<double> bounds = metrics::exponential_buckets(50e-6, 2.0, 22);
  for (const double slo : {0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0}) {
    bounds.push_back(slo);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

namespace {

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
      "success",      "client_error",        "rejected",       "timeout", "upstream_error",
      "stream_error", "client_disconnected", "client_too_slow"};
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
  auto requests =
      registry.counter("omni_proxy_requests_total",
                       "Requests by route and their one final outcome.", {"route", "outcome"});
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
  auto stages = registry.histogram("omni_proxy_request_stage_seconds",
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
      {&m.ttft, "omni_proxy_time_to_first_token_seconds",
       "Request received to first output event."},
      {&m.tpot, "omni_proxy_time_per_output_token_seconds", "Mean time between output events."},
      {&m.e2e, "omni_proxy_e2e_request_latency_seconds", "Request received to its last byte."},
      {&m.scheduling_latency, "omni_proxy_scheduling_latency_seconds",
       "A worker's hand-over to the scheduler thread until its decision (queue wait included)."},
      {&m.scheduler_pass, "omni_proxy_scheduler_pass_seconds", "One pass of the scheduler."},
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
      {&m.prefill_retries, "omni_proxy_retries_total", "Legs retried on another node.", "prefill"},
      {&m.decode_retries, "omni_proxy_retries_total", "Legs retried on another node.", "decode"},
      {&m.kv_redos, "omni_proxy_kv_redos_total",
       "Sequential PD requests prefilled again because the decode could not load the KV.",
       "decode"},
      {&m.prefill_errors, "omni_proxy_upstream_errors_total", "Failed engine calls.", "prefill"},
      {&m.decode_errors, "omni_proxy_upstream_errors_total", "Failed engine calls.", "decode"},
      {&m.relayed_events, "omni_proxy_relayed_events_total", "SSE events relayed to clients.",
       "decode"},
      {&m.cancelled_legs, "omni_proxy_cancelled_legs_total",
       "Engine calls cancelled (client gone, or the other PD leg failed).", "any"},
  };
  for (const C& c : counters) {
    auto child = plain_counter(registry, c.name, c.help, c.pool);
    if (!child) return std::move(child).error();
    *c.slot = *child;
  }
  auto tls_failures = registry.counter(
      "omni_proxy_tls_handshake_failures_total",
      "Client connections closed because their TLS handshake failed or timed out.", {});
  if (!tls_failures) return std::move(tls_failures).error();
  auto tls_child = (*tls_failures)->with({});
  if (!tls_child) return std::move(tls_child).error();
  m.tls_handshake_failures = *tls_child;
  auto converted = registry.counter("omni_proxy_chat_converted_requests_total",
                                    "Chat requests sent to the engines as completions requests "
                                    "(--chat-to-completions).",
                                    {});
  if (!converted) return std::move(converted).error();
  auto converted_child = (*converted)->with({});
  if (!converted_child) return std::move(converted_child).error();
  m.chat_converted = *converted_child;
  auto not_converted = registry.counter("omni_proxy_chat_not_converted_requests_total",
                                        "Chat requests forwarded as chat under "
                                        "--chat-to-completions, by the reason.",
                                        {"reason"});
  if (!not_converted) return std::move(not_converted).error();
  m.chat_not_converted = *not_converted;
  auto node_errors = registry.counter(
      "omni_proxy_node_errors_total",
      "Engine failures on each node, by kind: connect (refused, reset, unreachable), tls "
      "(handshake or certificate), timeout, http_5xx (an answer that says the engine failed), "
      "bad_response (malformed or not what was asked), stream_broken (a stream cut or ended "
      "with an error event), kv_transfer (a decode could not load the prefill's KV).",
      {"pool", "node", "kind"});
  if (!node_errors) return std::move(node_errors).error();
  m.node_errors = *node_errors;
  auto migrations = registry.counter(
      "omni_proxy_migrations_total",
      "Decode streams continued on another engine after part of the answer reached the client, "
      "by what broke the stream and whether the continuation completed.",
      {"cause", "outcome"});
  if (!migrations) return std::move(migrations).error();
  for (std::size_t c = 0; c < kMigrationCauseCount; ++c) {
    for (std::size_t o = 0; o < 2; ++o) {
      auto child = (*migrations)
                       ->with({migration_cause_name(static_cast<MigrationCause>(c)),
                               o == 0 ? "completed" : "failed"});
      if (!child) return std::move(child).error();
      m.migrations[c][o] = *child;
    }
  }
  auto fleet_messages = registry.counter(
      "omni_proxy_fleet_messages_total",
      "Fleet sync messages published (out) and received (in), by kind.", {"direction", "kind"});
  if (!fleet_messages) return std::move(fleet_messages).error();
  m.fleet_messages = *fleet_messages;
  auto fleet_dropped = registry.counter(
      "omni_proxy_fleet_dropped_total",
      "Fleet sync messages not applied or not sent, by reason (malformed, stale, other_fleet, "
      "config_mismatch, queue_full, publish_failed, slow_consumer).",
      {"reason"});
  if (!fleet_dropped) return std::move(fleet_dropped).error();
  m.fleet_dropped = *fleet_dropped;
  auto pd_fields = registry.counter("omni_proxy_client_pd_fields_total",
                                    "Requests whose client-supplied PD fields (kv_transfer_params, "
                                    "bootstrap_*, engine request ids) were stripped or refused.",
                                    {"action"});
  if (!pd_fields) return std::move(pd_fields).error();
  m.client_pd_fields = *pd_fields;
  auto class_requests = registry.counter(
      "omni_proxy_class_requests_total",
      "Generation requests by priority band and tenant (\"\" for none), counted as they end.",
      {"band", "tenant"});
  if (!class_requests) return std::move(class_requests).error();
  m.class_requests = *class_requests;
  auto tenant_rejected = registry.counter(
      "omni_proxy_tenant_rejected_total",
      "Requests refused with 429 by their tenant's limits, by tenant and reason (concurrency, "
      "tokens).",
      {"tenant", "reason"});
  if (!tenant_rejected) return std::move(tenant_rejected).error();
  m.tenant_rejected = *tenant_rejected;
  auto clamped = registry.counter(
      "omni_proxy_priority_clamped_total",
      "Requests that asked for a more urgent priority than their tenant may (or, without a "
      "tenant, than traffic.min_priority allows) and got that limit instead, by tenant.",
      {"tenant"});
  if (!clamped) return std::move(clamped).error();
  m.priority_clamped = *clamped;
  auto responses = registry.counter("omni_proxy_http_responses_total",
                                    "Responses sent, by route and HTTP status (handlers, the "
                                    "router and the HTTP server's own refusals).",
                                    {"route", "code"});
  if (!responses) return std::move(responses).error();
  m.responses = std::make_shared<ResponseCounter>(*responses);
  return m;
}

RouteLabel route_label(std::string_view path) noexcept {
  if (path == "/v1/completions") return RouteLabel::kCompletions;
  if (path == "/v1/chat/completions") return RouteLabel::kChatCompletions;
  if (path == "/v1/models") return RouteLabel::kModels;
  if (path == "/health") return RouteLabel::kHealth;
  if (path == "/ready") return RouteLabel::kReady;
  if (path == "/metrics") return RouteLabel::kMetrics;
  if (path.substr(0, 7) == "/admin/" || path == "/dashboard") return RouteLabel::kAdmin;
  return RouteLabel::kOther;
}

std::string_view route_label_name(RouteLabel route) noexcept {
  static constexpr std::array<std::string_view, kRouteLabelCount> kNames = {
      "/v1/completions", "/v1/chat/completions",
      "/v1/models",      "/health",
      "/ready",          "/metrics",
      "/admin",          "other",
      "unparsed"};
  return kNames[static_cast<std::size_t>(route)];
}

void ResponseCounter::count(RouteLabel route, int status) {
  if (!family_ || status == 0) return;  // 0: nothing was sent (the client left first)
  if (status < kFirst || status >= kFirst + kStatuses) status = 599;
  auto& slot =
      children_[static_cast<std::size_t>(route)][static_cast<std::size_t>(status - kFirst)];
  metrics::Counter* child = slot.load(std::memory_order_acquire);
  if (!child) {
    auto made = family_->with({route_label_name(route), std::to_string(status)});
    if (!made) return;
    child = *made;
    slot.store(child, std::memory_order_release);
  }
  child->inc();
}

}  // namespace omni::proxy
