// omni-proxy's configuration: a YAML file (--config) and flags, through omni_config.
//
//   omni-proxy --listen-host H --listen-port P --prefill-endpoints h1:p1,h2:p2
//              --decode-endpoints h3:p3 [--pd-mode sequential|parallel|aggregated] [--workers N]
//
// Endpoints come from the flag lists (no PD group) and/or the YAML node lists, which can name
// a PD group, (parallel mode) a bootstrap port per prefill node, and the ZeroMQ endpoint where
// the engine publishes its KV events (or --kv-events-endpoints ENGINE=ZMQ,...).
//
// Scheduling: --policy NAME (default "omni"), --tokenizer PATH with --block-size, --hash-algo
// and --hash-seed equal to the engines' so the proxy's block hashes equal theirs, and the
// prefix_index section (predicted TTL, staleness).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/config/runtime.hpp"
#include "omni/config/schema.hpp"
#include "omni/proxy/scheduler.hpp"
#include "omni/proxy/traffic.hpp"

namespace omni::proxy {

using namespace std::chrono_literals;

enum class PdMode { kSequential, kParallel, kAggregated };
std::string_view pd_mode_name(PdMode mode) noexcept;

// What to do with PD-protocol fields (kv_transfer_params, bootstrap_*) and engine request
// ids a client puts in its body: the proxy owns the PD protocol, so they never reach an
// engine (they would let a client point an engine's KV transfer at any host and port).
enum class ClientPdFields { kStrip, kReject };

struct ListenConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
};

struct NodeConfig {
  std::string endpoint;                           // host:port
  std::string group;                              // PD group; empty: pairs with any
  std::optional<std::uint16_t> bootstrap_port;    // SGLang bootstrap (prefill, parallel mode)
  std::optional<std::string> kv_events_endpoint;  // ZeroMQ PUB endpoint of its KV events
  std::optional<std::string> kv_events_replay_endpoint;  // its ROUTER replay socket (vLLM's)
};

struct PrefixIndexConfig {
  bool enabled = true;
  Duration predicted_ttl = 2s;  // a placement's approximate insert lives this long
  Duration stale_after = 10s;  // KV-event silence, with uncached work sent, that marks a node stale
  std::size_t max_entries = std::size_t{1} << 22;  // (block, node) pairs
};

struct LimitsConfig {
  std::size_t max_body_bytes = 8 * 1024 * 1024;
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_connections = 20'000;
  std::size_t queue_capacity = 1024;  // requests waiting in the proxy
  // Per stream: bytes relayed from the engine that a slow client has not read yet. Up to
  // this the proxy keeps reading the engine (which finishes, freeing its budget); past it
  // the engine stream is paused (TCP backpressure) until the client catches up or is cut.
  std::size_t stream_backlog_bytes = 1024 * 1024;
  // Per stream: the answer's text kept so that another engine can continue it (mid-stream
  // migration); a longer answer is no longer migrated.
  std::size_t migration_text_bytes = 256 * 1024;
  std::uint64_t node_max_outstanding_tokens = 1'000'000;
  std::uint32_t node_max_running = 256;
  // The engines' context length, for admission of requests without a max_tokens bound (they
  // may generate up to it); 0: learned from the engines' /v1/models (max_model_len), and
  // fallback_max_model_len until one answered.
  std::uint64_t max_model_len = 0;
  std::uint64_t fallback_max_model_len = 32'768;
};

struct TimeoutsConfig {
  Duration connect = 2s;
  Duration prefill = 120s;      // the whole prefill leg
  Duration first_token = 120s;  // a decode leg's first event (or whole answer), from its send
  Duration decode_idle = 120s;  // the longest silence from a decode stream
  Duration request = 3600s;     // the whole request; 0s: no bound
  Duration queue = 30s;         // the longest wait in the proxy queue
  Duration client_idle = 60s;
  Duration client_header = 10s;  // a client's whole request head (408 beyond: slow loris)
  Duration client_body = 60s;    // a client's whole request body (408 beyond)
  Duration client_write = 30s;   // one write to a client may block this long (slow readers)
  Duration shutdown_grace = 10s;
  // A drained node's in-flight streams may finish within this; then those that can migrate
  // continue on another engine.
  Duration drain_grace = 30s;
  Duration models = 2s;  // /v1/models waits this long for engines that have not answered
};

struct RetriesConfig {
  std::uint32_t prefill_attempts = 3;  // on different prefill nodes
  std::uint32_t decode_attempts = 2;   // only before the first byte reached the client
  // Sequential PD: times a request is prefilled again when its decode could not load the KV the
  // prefill left (the hold expired, the transfer failed): the proxy's fault, never the client's.
  std::uint32_t kv_redo_attempts = 1;
};

// Active-active replicas (docs/fleet.md): every replica of one fleet publishes the load it
// dispatches on NATS and places requests on the fleet-wide load. Off without nats_url.
struct FleetConfig {
  std::optional<std::string> nats_url;    // nats://host:port (several: comma-separated)
  std::string name = "omni";              // the fleet: the subject prefix its replicas share
  std::optional<std::string> replica_id;  // default: hostname:listen-port (or :pid)
  Duration lease = 3s;                    // a silent replica's load is forgotten after this
  Duration snapshot_period = 500ms;       // full snapshots (and heartbeats) this often
};

// A tenant (docs/traffic.md): who its clients are (the keys in its key file), its share in fair
// queuing, which priorities it may ask for, and its limits.
struct TenantConfig {
  std::string name;
  // Its clients' keys, one per line (as api_keys_file); each is also accepted as an API key.
  std::optional<std::string> api_keys_file;
  double weight = 1.0;  // its share against the other tenants of a band
  // Its requests see each node's thresholds scaled by this (0, 1]: headroom for the others.
  double node_share = 1.0;
  std::int64_t default_priority = 0;  // a request of it that names no priority
  // The most urgent priority its requests may ask for; more urgent ones are clamped to it.
  std::int64_t min_priority = 0;
  std::uint32_t max_concurrency = 0;  // requests in flight at once; 0: no limit
  // Token bucket over prompt + completion tokens: this many a second on average, at most
  // burst_tokens at once (default: 10 s worth); 0: no limit.
  double tokens_per_second = 0;
  double burst_tokens = 0;
};

// Traffic management (traffic.hpp, docs/traffic.md): priority bands, tenants, shedding.
struct TrafficConfig {
  std::vector<BandSpec> bands;  // most urgent first; none: one band
  BandOrder band_order = BandOrder::kStrict;
  Duration aging = 10s;  // a waiting request rises one band per aging; 0s: never
  // Requests of no tenant: the priority they get when they name none, and the most urgent one
  // they may ask for (more urgent values are clamped to it, and counted).
  std::int64_t default_priority = 0;
  std::int64_t min_priority = 0;
  // The request header that may carry a priority (an integer; it wins over the body's field).
  std::string priority_header = "X-Omni-Priority";
  // A request whose key names no tenant may name one by this header (its value: a tenant's
  // name). Anyone can send a header: set it only behind a front that authenticates clients and
  // sets (or strips) it. None: tenants are named by their keys only.
  std::optional<std::string> tenant_header;
  std::vector<TenantConfig> tenants;
};

struct HealthConfig {
  Duration interval = 1s;  // active /health probes; 0s disables them
  Duration timeout = 500ms;
  std::uint32_t failures_to_eject = 3;  // consecutive failed requests (passive)
  Duration ejection_time = 5s;
  Duration max_ejection_time = 60s;
  double max_ejection_percent = 50.0;  // of a role's nodes ejected at once (at least one)
  bool engine_metrics = true;          // read each engine's /metrics load with every probe
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
  std::string policy = std::string(sched::kDefaultPolicy);
  sched::NodeSpeed node_speed = sched::NodeSpeed::kLearned;
  // Tokenize once in the proxy; the rest must equal the engines' settings.
  std::optional<std::string> tokenizer;  // tokenizer.json or a model directory
  std::uint32_t block_size = 16;
  std::string hash_algo = "sha256";
  std::optional<std::string> hash_seed;  // the engines' PYTHONHASHSEED
  bool send_token_ids = false;           // /v1/completions text prompts go out as token ids
  // Chat requests go to the engines as completions of the proxy's rendered, tokenized template
  // (docs/chat-convert.md); needs tokenizer. Off for engines with a reasoning or tool parser.
  bool chat_to_completions = false;
  std::vector<std::string> kv_events_endpoints;         // "host:port=tcp://host:port", per engine
  std::vector<std::string> kv_events_replay_endpoints;  // the same form: replay sockets
  PrefixIndexConfig prefix_index;
  Duration scheduler_tick = 1ms;
  LimitsConfig limits;
  TimeoutsConfig timeouts;
  RetriesConfig retries;
  // Times a stream broken after part of its answer reached the client is continued on another
  // engine (migration.hpp); 0: never, the stream ends with an error event.
  std::uint32_t migration_max_attempts = 1;
  HealthConfig health;
  FleetConfig fleet;
  TrafficConfig traffic;
  // Secrets (secrets.hpp): each also from a file and an environment variable, redacted in dumps.
  std::vector<std::string> api_keys;  // clients' Bearer tokens; empty: no authentication
  std::optional<std::string> api_keys_file;
  std::optional<std::string> admin_token;  // Bearer token for /admin/*; none: local clients only
  std::optional<std::string> admin_token_file;
  std::optional<std::string> engine_api_key;  // sent to engines (vLLM's --api-key)
  std::optional<std::string> engine_api_key_file;
  // HTTPS on the client listener: a PEM certificate chain and its key, both or neither (re-read
  // on reload; a bad pair refuses the reload and the old certificate keeps serving).
  std::optional<std::string> tls_cert_file;
  std::optional<std::string> tls_key_file;
  // host:port of a listener of its own for /admin/*, /metrics and the probes; none: they are
  // served on the traffic port (operator routes to local clients or the admin token only).
  std::optional<std::string> admin_listen;
  // HTTPS on the admin listener, and (client CA) mutual TLS: only clients with a certificate that
  // CA signed complete the handshake, as nginx's ssl_verify_client on.
  std::optional<std::string> admin_tls_cert_file;
  std::optional<std::string> admin_tls_key_file;
  std::optional<std::string> admin_tls_client_ca_file;
  // Engines given as https://host:port: verified against this CA file (none: the system's trust
  // store), with this client certificate if they require one. All re-read on reload.
  std::optional<std::string> engine_tls_ca_file;
  std::optional<std::string> engine_tls_cert_file;
  std::optional<std::string> engine_tls_key_file;
  ClientPdFields client_pd_fields = ClientPdFields::kStrip;
  std::optional<std::string> access_log;  // file path, or "-" for standard output
  config::LogConfig log;
};

void describe(config::Schema<ProxyConfig>& schema);

// What the policy registry gets from the configuration.
inline sched::PolicySettings policy_settings(const ProxyConfig& config) {
  sched::PolicySettings settings;
  settings.node_speed = config.node_speed;
  return settings;
}

// One node of the effective configuration.
struct NodeEntry {
  NodeSpec spec;
  std::string host;
  std::uint16_t port = 0;
  bool tls = false;  // written as https://host:port: spoken over TLS, the engine verified
  std::uint16_t bootstrap_port = 8998;
  std::optional<std::string> kv_events_endpoint;
  std::optional<std::string> kv_events_replay_endpoint;
};
// Flag endpoints and YAML nodes together. In aggregated mode only the decode pool is used.
std::vector<NodeEntry> node_entries(const ProxyConfig& config);

// The command-line flags among argv that carry a secret in the clear (visible to every local
// user in `ps`): "--api-keys", "--admin-token", "--engine-api-key". For a start-up warning.
std::vector<std::string> secret_flags_given(int argc, const char* const* argv);

// A listener's host:port ([v6]:port too); port 0 picks an ephemeral one.
Result<ListenConfig> listen_endpoint(std::string_view text);

}  // namespace omni::proxy
