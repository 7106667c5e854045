#include "omni/proxy/config.hpp"

#include "omni/http/client.hpp"

namespace omni::proxy {
namespace {

Status valid_endpoint(const std::string& text) {
  auto endpoint = http::Endpoint::parse(text);
  if (!endpoint) return std::move(endpoint).error();
  return {};
}

void describe_node(config::Schema<NodeConfig>& s) {
  s.field("endpoint", &NodeConfig::endpoint, "host:port of the engine").each(valid_endpoint);
  s.field("group", &NodeConfig::group, "PD group: a decode choice stays within the prefill's group");
  s.field("bootstrap_port", &NodeConfig::bootstrap_port,
          "SGLang bootstrap port of this prefill node (parallel mode)");
}

void describe_limits(config::Schema<LimitsConfig>& s) {
  using C = LimitsConfig;
  s.bytes("max_body_bytes", &C::max_body_bytes, "Largest request body (413 beyond)").min(1024);
  s.bytes("max_header_bytes", &C::max_header_bytes, "Largest request head (431 beyond)").min(1024);
  s.field("max_connections", &C::max_connections, "Client connections (503 beyond)").min(1);
  s.field("queue_capacity", &C::queue_capacity,
          "Requests waiting in the proxy when every node is over its thresholds (429 beyond)");
  s.field("node_max_outstanding_tokens", &C::node_max_outstanding_tokens,
          "A node at or over this many outstanding tokens takes no new request").min(1);
  s.field("node_max_running", &C::node_max_running,
          "A node running this many requests takes no new one").min(1);
}

void describe_timeouts(config::Schema<TimeoutsConfig>& s) {
  using C = TimeoutsConfig;
  s.field("connect", &C::connect, "Connecting to an engine").min(1ms);
  s.field("prefill", &C::prefill, "A whole prefill leg").min(1ms);
  s.field("decode_idle", &C::decode_idle, "Longest silence from a decode engine").min(1ms);
  s.field("queue", &C::queue, "Longest wait in the proxy queue (then 503)").min(1ms);
  s.field("client_idle", &C::client_idle, "Keep-alive wait for a client's next request").min(1ms);
  s.field("shutdown_grace", &C::shutdown_grace, "In-flight requests get this long at shutdown");
}

void describe_retries(config::Schema<RetriesConfig>& s) {
  s.field("prefill_attempts", &RetriesConfig::prefill_attempts,
          "Tries of a prefill, each on another node").range(1, 16);
  s.field("decode_attempts", &RetriesConfig::decode_attempts,
          "Tries of a decode before its first byte reached the client").range(1, 16);
}

void describe_health(config::Schema<HealthConfig>& s) {
  using C = HealthConfig;
  s.field("interval", &C::interval, "Active GET /health probe period; 0s disables probes");
  s.field("timeout", &C::timeout, "A probe's deadline").min(1ms);
  s.field("failures_to_eject", &C::failures_to_eject,
          "Consecutive failed requests that open a node's circuit").min(1);
  s.field("ejection_time", &C::ejection_time, "First ejection; doubles on each re-ejection").min(1ms);
  s.field("max_ejection_time", &C::max_ejection_time, "Longest ejection").min(1ms);
}

}  // namespace

std::string_view pd_mode_name(PdMode mode) noexcept {
  switch (mode) {
    case PdMode::kSequential: return "sequential";
    case PdMode::kParallel: return "parallel";
    case PdMode::kAggregated: return "aggregated";
  }
  return "unknown";
}

void describe(config::Schema<ProxyConfig>& s) {
  using C = ProxyConfig;
  s.section("listen", &C::listen, [](config::Schema<ListenConfig>& l) {
    l.field("host", &ListenConfig::host, "Address to listen on").non_empty();
    l.field("port", &ListenConfig::port, "TCP port; 0 picks an ephemeral one");
  });
  s.field("workers", &C::workers, "I/O worker threads").range(1, 256);
  s.field("prefill_endpoints", &C::prefill_endpoints, "Prefill engines, host:port")
      .each(valid_endpoint);
  s.field("decode_endpoints", &C::decode_endpoints,
          "Decode engines, host:port (aggregated mode: the engines serving whole requests)")
      .each(valid_endpoint);
  s.list("prefill_nodes", &C::prefill_nodes, "Prefill engines with a PD group (YAML only)",
         describe_node);
  s.list("decode_nodes", &C::decode_nodes, "Decode engines with a PD group (YAML only)",
         describe_node);
  s.field("pd_mode", &C::pd_mode, "How a request is split between prefill and decode")
      .choices({{"sequential", PdMode::kSequential},
                {"parallel", PdMode::kParallel},
                {"aggregated", PdMode::kAggregated}});
  s.field("bootstrap_port", &C::bootstrap_port, "Default SGLang bootstrap port of prefill nodes");
  s.field("policy", &C::policy, "Scheduling policy: least-outstanding | round-robin")
      .each([](const std::string& name) -> Status {
        auto policy = make_policy(name);
        if (!policy) return std::move(policy).error();
        return {};
      });
  s.field("scheduler_tick", &C::scheduler_tick, "Scheduler pass period when idle").range(10us, 100ms);
  s.section("limits", &C::limits, describe_limits);
  s.section("timeouts", &C::timeouts, describe_timeouts);
  s.section("retries", &C::retries, describe_retries);
  s.section("health", &C::health, describe_health);
  s.field("api_keys", &C::api_keys, "Accepted client keys (Authorization: Bearer); none: open");
  s.field("admin_token", &C::admin_token, "Bearer token required by /admin/*").non_empty();
  s.field("access_log", &C::access_log, "One JSON line per request to this file (\"-\": stdout)")
      .non_empty();
  s.section("log", &C::log, config::describe_log);
  s.check([](const ProxyConfig& c) -> Status {
    const bool no_decode = c.decode_endpoints.empty() && c.decode_nodes.empty();
    const bool no_prefill = c.prefill_endpoints.empty() && c.prefill_nodes.empty();
    if (no_decode) return make_error(ErrorCode::kInvalidArgument, "no decode endpoint configured");
    if (c.pd_mode != PdMode::kAggregated && no_prefill) {
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("pd_mode ") + std::string(pd_mode_name(c.pd_mode)) +
                            " needs prefill endpoints");
    }
    return {};
  });
}

std::vector<NodeEntry> node_entries(const ProxyConfig& c) {
  std::vector<NodeEntry> entries;
  auto add = [&](Role role, const std::string& text, const std::string& group,
                 std::optional<std::uint16_t> bootstrap) {
    auto endpoint = http::Endpoint::parse(text);
    if (!endpoint) return;  // validated at load
    for (const NodeEntry& known : entries) {
      if (known.spec.role == role && known.spec.name == endpoint->to_string()) return;
    }
    entries.push_back({NodeSpec{endpoint->to_string(), role, group}, endpoint->host, endpoint->port,
                       bootstrap.value_or(c.bootstrap_port)});
  };
  if (c.pd_mode != PdMode::kAggregated) {
    for (const auto& text : c.prefill_endpoints) add(Role::kPrefill, text, "", std::nullopt);
    for (const auto& node : c.prefill_nodes) add(Role::kPrefill, node.endpoint, node.group, node.bootstrap_port);
  }
  for (const auto& text : c.decode_endpoints) add(Role::kDecode, text, "", std::nullopt);
  for (const auto& node : c.decode_nodes) add(Role::kDecode, node.endpoint, node.group, std::nullopt);
  return entries;
}

}  // namespace omni::proxy
