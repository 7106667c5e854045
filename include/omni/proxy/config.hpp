// omni-proxy's configuration: a YAML file (--config) and flags, through omni_config.
//
//   omni-proxy --listen-host H --listen-port P --prefill-endpoints h1:p1,h2:p2
//              --decode-endpoints h3:p3 [--pd-mode sequential|parallel|aggregated] [--workers N]
//
// Endpoints come from the flag lists (no PD group) and/or the YAML node lists, which can name
// a PD group and (parallel mode) a bootstrap port per prefill node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/config/runtime.hpp"
#include "omni/config/schema.hpp"
#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {

using namespace std::chrono_literals;

enum class PdMode { kSequential, kParallel, kAggregated };
std::string_view pd_mode_name(PdMode mode) noexcept;

struct ListenConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
};

struct NodeConfig {
  std::string endpoint;                  // host:port
  std::string group;                     // PD group; empty: pairs with any
  std::optional<std::uint16_t> bootstrap_port;  // SGLang bootstrap (prefill, parallel mode)
};

struct LimitsConfig {
  std::size_t max_body_bytes = 8 * 1024 * 1024;
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_connections = 20'000;
  std::size_t queue_capacity = 1024;          // requests waiting in the proxy
  std::uint64_t node_max_outstanding_tokens = 1'000'000;
  std::uint32_t node_max_running = 256;
};

struct TimeoutsConfig {
  Duration connect = 2s;
  Duration prefill = 120s;       // the whole prefill leg
  Duration decode_idle = 120s;   // the longest silence from a decode stream
  Duration queue = 30s;          // the longest wait in the proxy queue
  Duration client_idle = 60s;
  Duration shutdown_grace = 10s;
};

struct RetriesConfig {
  std::uint32_t prefill_attempts = 3;  // on different prefill nodes
  std::uint32_t decode_attempts = 2;   // only before the first byte reached the client
};

struct HealthConfig {
  Duration interval = 1s;   // active /health probes; 0s disables them
  Duration timeout = 500ms;
  std::uint32_t failures_to_eject = 3;  // consecutive failed requests (passive)
  Duration ejection_time = 5s;
  Duration max_ejection_time = 60s;
};

struct ProxyConfig {
  ListenConfig listen;
  unsigned workers = 1;  // I/O threads
  std::vector<std::string> prefill_endpoints;
  std::vector<std::string> decode_endpoints;
  std::vector<NodeConfig> prefill_nodes;
  std::vector<NodeConfig> decode_nodes;
  PdMode pd_mode = PdMode::kSequential;
  std::uint16_t bootstrap_port = 8998;  // default SGLang bootstrap port of prefill nodes
  std::string policy = "least-outstanding";
  Duration scheduler_tick = 1ms;
  LimitsConfig limits;
  TimeoutsConfig timeouts;
  RetriesConfig retries;
  HealthConfig health;
  std::vector<std::string> api_keys;     // clients' Bearer tokens; empty: no authentication
  std::optional<std::string> admin_token;  // Bearer token for /admin/*; none: admin is open
  std::optional<std::string> access_log;   // file path, or "-" for standard output
  config::LogConfig log;
};

void describe(config::Schema<ProxyConfig>& schema);

// One node of the effective configuration.
struct NodeEntry {
  NodeSpec spec;
  std::string host;
  std::uint16_t port = 0;
  std::uint16_t bootstrap_port = 8998;
};
// Flag endpoints and YAML nodes together. In aggregated mode only the decode pool is used.
std::vector<NodeEntry> node_entries(const ProxyConfig& config);

}  // namespace omni::proxy
