#include "omni/proxy/config.hpp"

#include <unordered_map>

#include "omni/http/client.hpp"
#include "omni/kvcache/block_hash.hpp"

namespace omni::proxy {
namespace {

Status valid_endpoint(const std::string& text) {
  auto endpoint = http::Endpoint::parse(text);
  if (!endpoint) return std::move(endpoint).error();
  return {};
}

// "host:port=tcp://..." → the engine's name (normalised like node names) and the ZeroMQ endpoint.
Result<std::pair<std::string, std::string>> kv_events_pair(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq + 1 == text.size()) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "'" + text + "' is not ENGINE=ZMQ_ENDPOINT (e.g. 10.0.0.1:8100=tcp://10.0.0.1:5557)");
  }
  auto engine = http::Endpoint::parse(text.substr(0, eq));
  if (!engine) return std::move(engine).error();
  return std::pair{engine->to_string(), text.substr(eq + 1)};
}

Status valid_kv_events_pair(const std::string& text) {
  auto pair = kv_events_pair(text);
  if (!pair) return std::move(pair).error();
  return {};
}

std::string policy_doc() {
  std::string doc = "Scheduling policy (default " + std::string(sched::kDefaultPolicy) + "):";
  for (const sched::PolicyInfo& p : sched::placement_policies()) {
    doc += " " + p.name + " = " + p.summary + ";";
  }
  return doc;
}

void describe_prefix_index(config::Schema<PrefixIndexConfig>& s) {
  using C = PrefixIndexConfig;
  s.field("enabled", &C::enabled, "Keep a global prefix index (block hashes per node)");
  s.field("predicted_ttl", &C::predicted_ttl,
          "Lifetime of a placement's predicted blocks until the engine's events confirm them")
      .min(1ms);
  s.field("stale_after", &C::stale_after,
          "KV-event silence after sending a node uncached work that makes its cache entries "
          "stop attracting traffic")
      .min(1ms);
  s.field("max_entries", &C::max_entries, "Bound on (block, node) pairs; least recent dropped")
      .min(1024);
}

void describe_node(config::Schema<NodeConfig>& s) {
  s.field("endpoint", &NodeConfig::endpoint, "host:port of the engine").each(valid_endpoint);
  s.field("group", &NodeConfig::group,
          "PD group: a decode choice stays within the prefill's group");
  s.field("bootstrap_port", &NodeConfig::bootstrap_port,
          "SGLang bootstrap port of this prefill node (parallel mode)");
  s.field("kv_events_endpoint", &NodeConfig::kv_events_endpoint,
          "ZeroMQ endpoint where this engine publishes its KV events (tcp://host:port)")
      .non_empty();
  s.field("kv_events_replay_endpoint", &NodeConfig::kv_events_replay_endpoint,
          "The engine's KV-event replay socket (vLLM's replay_endpoint), used to recover a gap")
      .non_empty();
}

void describe_band(config::Schema<BandSpec>& s) {
  s.field("name", &BandSpec::name, "The band's name (metrics, logs, errors)").non_empty();
  s.field("max_priority", &BandSpec::max_priority,
          "Requests with a priority up to this (and above the previous band's) land here; the "
          "last band takes every larger priority");
  s.field("weight", &BandSpec::weight, "band_order weighted: its share of placements").min(0.001);
  s.field("sheddable", &BandSpec::sheddable,
          "Given up first under overload: evicted from a full queue for a more urgent request, "
          "refused past max_waiting, 429 past its queue_timeout");
  s.field("queue_timeout", &BandSpec::queue_timeout,
          "Longest wait of its requests; 0s: timeouts.queue");
  s.field("max_waiting", &BandSpec::max_waiting,
          "Sheddable bands: at most this many of its requests wait (429 beyond); 0: no bound");
  s.field("node_share", &BandSpec::node_share,
          "Its requests see each node's thresholds scaled by this (0..1]: the rest is headroom "
          "for more urgent bands")
      .range(0.01, 1.0);
}

void describe_tenant(config::Schema<TenantConfig>& s) {
  using C = TenantConfig;
  s.field("name", &C::name, "The tenant's name (metrics, access log)").non_empty();
  s.field("api_keys_file", &C::api_keys_file,
          "Its clients' keys, one per line (also accepted as API keys); re-read on reload; "
          "optional with traffic.tenant_header")
      .non_empty();
  s.field("weight", &C::weight, "Its share against the other tenants of a band").min(0.001);
  s.field("node_share", &C::node_share,
          "Its requests see each node's thresholds scaled by this (0..1]: the rest is headroom "
          "for the other tenants")
      .range(0.01, 1.0);
  s.field("default_priority", &C::default_priority, "Priority of its requests that name none");
  s.field("min_priority", &C::min_priority,
          "The most urgent priority it may ask for (lower values are clamped to it)");
  s.field("max_concurrency", &C::max_concurrency, "Its requests in flight at once; 0: no limit");
  s.field("tokens_per_second", &C::tokens_per_second,
          "Token bucket over prompt + completion tokens: average rate; 0: no limit")
      .min(0.0);
  s.field("burst_tokens", &C::burst_tokens,
          "The bucket's size (default: 10 s of tokens_per_second)")
      .min(0.0);
}

void describe_traffic(config::Schema<TrafficConfig>& s) {
  using C = TrafficConfig;
  s.list("bands", &C::bands, "Priority bands, most urgent first (YAML only)", describe_band);
  s.field("band_order", &C::band_order,
          "strict: a more urgent band always goes first; weighted: bands share placements by "
          "weight")
      .choices({{"strict", BandOrder::kStrict}, {"weighted", BandOrder::kWeighted}});
  s.field("aging", &C::aging, "A waiting request rises one band per this wait; 0s: never");
  s.field("default_priority", &C::default_priority,
          "Priority of requests without a tenant that name none");
  s.field("min_priority", &C::min_priority,
          "The most urgent priority a request without a tenant may ask for (clamped)");
  s.field("priority_header", &C::priority_header,
          "Request header that may carry the priority (wins over the body's field)")
      .non_empty();
  s.field("tenant_header", &C::tenant_header,
          "Request header naming the tenant of a request whose key names none (only behind a "
          "front that authenticates clients and sets it)")
      .non_empty();
  s.list("tenants", &C::tenants, "Tenants, by their clients' keys (YAML only)", describe_tenant);
}

Status valid_traffic(const TrafficConfig& t) {
  if (Status bands = valid_bands(t.bands); !bands) {
    return make_error(ErrorCode::kInvalidArgument, "traffic.bands: " + bands.error().message);
  }
  for (std::size_t i = 0; i < t.tenants.size(); ++i) {
    const TenantConfig& tenant = t.tenants[i];
    for (std::size_t j = 0; j < i; ++j) {
      if (t.tenants[j].name == tenant.name) {
        return make_error(ErrorCode::kInvalidArgument,
                          "traffic.tenants: two tenants are named '" + tenant.name + "'");
      }
    }
    if (!tenant.api_keys_file && !t.tenant_header) {
      return make_error(ErrorCode::kInvalidArgument,
                        "traffic.tenants: '" + tenant.name +
                            "' needs an api_keys_file (or traffic.tenant_header to name it)");
    }
    if (tenant.default_priority < tenant.min_priority) {
      return make_error(ErrorCode::kInvalidArgument,
                        "traffic.tenants: '" + tenant.name +
                            "' has a default_priority more urgent than its min_priority");
    }
  }
  if (t.default_priority < t.min_priority) {
    return make_error(ErrorCode::kInvalidArgument,
                      "traffic: default_priority is more urgent than min_priority");
  }
  return {};
}

void describe_limits(config::Schema<LimitsConfig>& s) {
  using C = LimitsConfig;
  s.bytes("max_body_bytes", &C::max_body_bytes, "Largest request body (413 beyond)").min(1024);
  s.bytes("max_header_bytes", &C::max_header_bytes, "Largest request head (431 beyond)").min(1024);
  s.field("max_connections", &C::max_connections, "Client connections (503 beyond)").min(1);
  s.bytes("stream_backlog_bytes", &C::stream_backlog_bytes,
          "Per stream, engine output a slow client has not read yet that the proxy keeps; "
          "beyond it the engine stream is paused")
      .min(1024);
  s.bytes("migration_text_bytes", &C::migration_text_bytes,
          "Per stream: the answer's text kept so that another engine can continue it; a longer "
          "answer is no longer migrated")
      .min(1024);
  s.field("queue_capacity", &C::queue_capacity,
          "Requests waiting in the proxy when every node is over its thresholds (429 beyond)");
  s.field("node_max_outstanding_tokens", &C::node_max_outstanding_tokens,
          "A node at or over this many outstanding tokens takes no new request")
      .min(1);
  s.field("node_max_running", &C::node_max_running,
          "A node running this many requests takes no new one")
      .min(1);
  s.field("max_model_len", &C::max_model_len,
          "The engines' context length, counted for requests without a max_tokens bound; 0: "
          "learned from the engines' /v1/models");
  s.field("fallback_max_model_len", &C::fallback_max_model_len,
          "Context length assumed until an engine reported its own")
      .min(1);
}

void describe_timeouts(config::Schema<TimeoutsConfig>& s) {
  using C = TimeoutsConfig;
  s.field("connect", &C::connect, "Connecting to an engine").min(1ms);
  s.field("prefill", &C::prefill, "A whole prefill leg").min(1ms);
  s.field("first_token", &C::first_token,
          "A decode leg's first event (or whole answer) must come within this, from its send")
      .min(1ms);
  s.field("decode_idle", &C::decode_idle, "Longest silence from a decode engine").min(1ms);
  s.field("request", &C::request, "The whole request, every leg and retry included; 0s: no bound");
  s.field("queue", &C::queue, "Longest wait in the proxy queue (then 503)").min(1ms);
  s.field("client_idle", &C::client_idle, "Keep-alive wait for a client's next request").min(1ms);
  s.field("client_header", &C::client_header,
          "A client's whole request head must arrive within this (408 beyond)")
      .min(1ms);
  s.field("client_body", &C::client_body,
          "A client's whole request body must arrive within this (408 beyond)")
      .min(1ms);
  s.field("client_write", &C::client_write,
          "Longest a write to a client may block; a slower reader is cut (logged)")
      .min(1ms);
  s.field("models", &C::models,
          "How long /v1/models waits for engines whose model list is not known yet")
      .min(1ms);
  s.field("shutdown_grace", &C::shutdown_grace, "In-flight requests get this long at shutdown");
  s.field("drain_grace", &C::drain_grace,
          "A drained node's in-flight streams get this long; then those that can migrate "
          "continue on another engine (0s: at once)");
}

void describe_retries(config::Schema<RetriesConfig>& s) {
  s.field("prefill_attempts", &RetriesConfig::prefill_attempts,
          "Tries of a prefill, each on another node")
      .range(1, 16);
  s.field("decode_attempts", &RetriesConfig::decode_attempts,
          "Tries of a decode before its first byte reached the client")
      .range(1, 16);
  s.field("kv_redo_attempts", &RetriesConfig::kv_redo_attempts,
          "Sequential PD: prefills redone when the decode could not load the prefill's KV")
      .range(0, 4);
}

void describe_fleet(config::Schema<FleetConfig>& s) {
  using C = FleetConfig;
  s.field("nats_url", &C::nats_url,
          "NATS server(s) of the fleet sync (nats://host:port, comma-separated); none: this "
          "replica runs alone")
      .non_empty();
  s.field("name", &C::name, "The fleet's name: replicas with one name share their load")
      .each([](const std::string& name) -> Status {
        const bool ok = !name.empty() && name.size() <= 64 &&
                        name.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            "0123456789_-") == std::string::npos;
        if (ok) return {};
        return make_error(
            ErrorCode::kInvalidArgument,
            "fleet name '" + name + "': 1-64 of A-Z a-z 0-9 _ - (a NATS subject token)");
      });
  s.field("replica_id", &C::replica_id,
          "This replica's name in the fleet; default hostname:listen-port (hostname:pid for an "
          "ephemeral port)")
      .non_empty();
  s.field("lease", &C::lease, "A replica silent this long has its load forgotten").min(100ms);
  s.field("snapshot_period", &C::snapshot_period,
          "How often each replica publishes its whole load (heartbeat)")
      .range(10ms, 60s);
}

void describe_health(config::Schema<HealthConfig>& s) {
  using C = HealthConfig;
  s.field("interval", &C::interval, "Active GET /health probe period; 0s disables probes");
  s.field("timeout", &C::timeout, "A probe's deadline").min(1ms);
  s.field("failures_to_eject", &C::failures_to_eject,
          "Consecutive failed requests that open a node's circuit")
      .min(1);
  s.field("ejection_time", &C::ejection_time, "First ejection; doubles on each re-ejection")
      .min(1ms);
  s.field("max_ejection_time", &C::max_ejection_time, "Longest ejection").min(1ms);
  s.field("max_ejection_percent", &C::max_ejection_percent,
          "At most this share of a role's nodes is ejected at once (one may always be)")
      .range(0.0, 100.0);
  s.field(
      "engine_metrics", &C::engine_metrics,
      "With each probe, read the engine's own load from its /metrics (vllm:num_requests_running, "
      "vllm:num_requests_waiting, vllm:kv_cache_usage_perc) for the policies that weigh it");
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
  s.field("policy", &C::policy, policy_doc()).each([](const std::string& name) -> Status {
    auto policy = sched::make_placement_policy(name);
    if (!policy) return std::move(policy).error();
    return {};
  });
  s.field("node_speed", &C::node_speed,
          "How predictive policies (omni) estimate each prefill node's speed: learned from the "
          "prefill durations the proxy observes, or equal for every node")
      .choices({{"learned", sched::NodeSpeed::kLearned}, {"equal", sched::NodeSpeed::kEqual}});
  s.field("tokenizer", &C::tokenizer,
          "tokenizer.json (or a model directory) the engines use: exact token counts and block "
          "hashes; without it text prompts are estimated at 4 bytes a token and not hashed")
      .non_empty();
  s.field("block_size", &C::block_size, "The engines' KV block size (--block-size)").range(1, 4096);
  s.field("hash_algo", &C::hash_algo,
          "The engines' --prefix-caching-hash-algo: sha256, sha256_cbor, xxhash, xxhash_cbor")
      .each([](const std::string& name) -> Status {
        auto algo = kvcache::parse_hash_algo(name);
        if (!algo) return std::move(algo).error();
        return {};
      });
  s.field("hash_seed", &C::hash_seed,
          "The engines' PYTHONHASHSEED (root of the block-hash chain); default this process's "
          "$PYTHONHASHSEED, else random (the engines' events then never match)");
  s.field("send_token_ids", &C::send_token_ids,
          "Send /v1/completions text prompts to the engine as the proxy's token ids (needs "
          "--tokenizer; the engine skips tokenizing)");
  s.field("chat_to_completions", &C::chat_to_completions,
          "Render and tokenize chat requests in the proxy and send them to the engines' "
          "/v1/completions, converting the answer back (needs --tokenizer with the model's "
          "tokenizer_config.json; keep off for engines with a reasoning or tool parser)");
  s.field("kv_events_endpoints", &C::kv_events_endpoints,
          "KV-event streams: ENGINE=ZMQ_ENDPOINT per engine (host:port=tcp://host:port)")
      .each(valid_kv_events_pair);
  s.field("kv_events_replay_endpoints", &C::kv_events_replay_endpoints,
          "KV-event replay sockets: ENGINE=ZMQ_ENDPOINT per engine (vLLM's replay_endpoint)")
      .each(valid_kv_events_pair);
  s.section("prefix_index", &C::prefix_index, describe_prefix_index);
  s.field("scheduler_tick", &C::scheduler_tick, "Scheduler pass period when idle")
      .range(10us, 100ms);
  s.section("limits", &C::limits, describe_limits);
  s.section("timeouts", &C::timeouts, describe_timeouts);
  s.section("retries", &C::retries, describe_retries);
  s.field("migration_max_attempts", &C::migration_max_attempts,
          "Times a decode stream that broke after tokens reached the client is continued on "
          "another engine (same stream, true usage); 0: end it with an error event")
      .range(0, 8);
  s.section("health", &C::health, describe_health);
  s.section("fleet", &C::fleet, describe_fleet);
  s.section("traffic", &C::traffic, describe_traffic);
  s.field("api_keys", &C::api_keys,
          "Accepted client keys (Authorization: Bearer); none: open. Prefer api_keys_file or "
          "$OMNI_API_KEYS: flags show in ps")
      .secret();
  s.field("api_keys_file", &C::api_keys_file,
          "File of accepted client keys, one per line ('#' comments); re-read on reload")
      .non_empty();
  s.field("admin_token", &C::admin_token,
          "Bearer token required by /admin/* (and by /metrics off-host on the traffic port); "
          "none: local clients only. Prefer admin_token_file or $OMNI_ADMIN_TOKEN")
      .non_empty()
      .secret();
  s.field("admin_token_file", &C::admin_token_file,
          "File holding the admin token; re-read on reload")
      .non_empty();
  s.field("engine_api_key", &C::engine_api_key,
          "Key sent to the engines as Authorization: Bearer (vLLM's --api-key). Prefer "
          "engine_api_key_file or $OMNI_ENGINE_API_KEY")
      .non_empty()
      .secret();
  s.field("engine_api_key_file", &C::engine_api_key_file,
          "File holding the engines' key; re-read on reload")
      .non_empty();
  s.field("tls_cert_file", &C::tls_cert_file,
          "HTTPS on the client listener: the PEM certificate chain (leaf first); re-read on "
          "reload")
      .non_empty();
  s.field("tls_key_file", &C::tls_key_file,
          "The PEM private key of tls_cert_file; re-read on reload")
      .non_empty();
  s.field("admin_tls_cert_file", &C::admin_tls_cert_file,
          "HTTPS on the admin listener: the PEM certificate chain; re-read on reload")
      .non_empty();
  s.field("admin_tls_key_file", &C::admin_tls_key_file,
          "The PEM private key of admin_tls_cert_file; re-read on reload")
      .non_empty();
  s.field("admin_tls_client_ca_file", &C::admin_tls_client_ca_file,
          "Mutual TLS on the admin listener: only clients presenting a certificate this CA signed "
          "complete the handshake (the admin token, if set, is still required on /admin/*)")
      .non_empty();
  s.field("engine_tls_ca_file", &C::engine_tls_ca_file,
          "Engines given as https://host:port are verified against this PEM CA file (default: "
          "the system's trust store); re-read on reload")
      .non_empty();
  s.field("engine_tls_cert_file", &C::engine_tls_cert_file,
          "A client certificate chain presented to https engines that require one")
      .non_empty();
  s.field("engine_tls_key_file", &C::engine_tls_key_file,
          "The PEM private key of "
          "engine_tls_cert_file")
      .non_empty();
  s.field("admin_listen", &C::admin_listen,
          "host:port of a separate listener for /admin/*, /metrics and the probes (e.g. "
          "127.0.0.1:9090); none: they share the traffic port, local clients or the admin token "
          "only")
      .each([](const std::string& text) -> Status {
        auto at = listen_endpoint(text);
        if (!at) return std::move(at).error();
        return {};
      });
  s.field("client_pd_fields", &C::client_pd_fields,
          "Client-supplied kv_transfer_params, bootstrap_* and engine request ids: strip them, or "
          "refuse the request with 400 (the proxy owns the PD protocol)")
      .choices({{"strip", ClientPdFields::kStrip}, {"reject", ClientPdFields::kReject}});
  s.field("access_log", &C::access_log, "One JSON line per request to this file (\"-\": stdout)")
      .non_empty();
  s.section("log", &C::log, config::describe_log);
  s.check([](const ProxyConfig& c) -> Status { return valid_traffic(c.traffic); });
  s.check([](const ProxyConfig& c) -> Status {
    const bool no_decode = c.decode_endpoints.empty() && c.decode_nodes.empty();
    const bool no_prefill = c.prefill_endpoints.empty() && c.prefill_nodes.empty();
    if (no_decode) return make_error(ErrorCode::kInvalidArgument, "no decode endpoint configured");
    if (c.pd_mode != PdMode::kAggregated && no_prefill) {
      return make_error(ErrorCode::kInvalidArgument, std::string("pd_mode ") +
                                                         std::string(pd_mode_name(c.pd_mode)) +
                                                         " needs prefill endpoints");
    }
    for (const auto& text : c.kv_events_endpoints) {
      auto pair = kv_events_pair(text);
      if (!pair) continue;  // reported by the field itself
      bool known = false;
      for (const NodeEntry& node : node_entries(c)) known = known || node.spec.name == pair->first;
      if (!known) {
        return make_error(ErrorCode::kInvalidArgument,
                          "kv_events_endpoints: " + pair->first + " is not a configured engine");
      }
    }
    if (c.tls_cert_file.has_value() != c.tls_key_file.has_value()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "tls_cert_file and tls_key_file go together: give both or neither");
    }
    if (c.admin_tls_cert_file.has_value() != c.admin_tls_key_file.has_value()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "admin_tls_cert_file and admin_tls_key_file go together: give both or "
                        "neither");
    }
    if ((c.admin_tls_cert_file || c.admin_tls_client_ca_file) && !c.admin_listen) {
      return make_error(ErrorCode::kInvalidArgument,
                        "admin_tls_* need an admin listener (--admin-listen)");
    }
    if (c.admin_tls_client_ca_file && !c.admin_tls_cert_file) {
      return make_error(ErrorCode::kInvalidArgument,
                        "admin_tls_client_ca_file needs admin_tls_cert_file and "
                        "admin_tls_key_file (client certificates are asked for during HTTPS)");
    }
    if (c.engine_tls_cert_file.has_value() != c.engine_tls_key_file.has_value()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "engine_tls_cert_file and engine_tls_key_file go together: give both or "
                        "neither");
    }
    if (c.send_token_ids && !c.tokenizer) {
      return make_error(ErrorCode::kInvalidArgument, "send_token_ids needs a tokenizer");
    }
    if (c.chat_to_completions && !c.tokenizer) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "--chat-to-completions needs --tokenizer (the model's tokenizer and chat template)");
    }
    return {};
  });
}

std::vector<NodeEntry> node_entries(const ProxyConfig& c) {
  std::vector<NodeEntry> entries;
  std::unordered_map<std::string, std::string> events;  // engine name → ZeroMQ endpoint
  for (const auto& text : c.kv_events_endpoints) {
    if (auto pair = kv_events_pair(text)) events[pair->first] = pair->second;
  }
  std::unordered_map<std::string, std::string> replays;  // engine name → replay endpoint
  for (const auto& text : c.kv_events_replay_endpoints) {
    if (auto pair = kv_events_pair(text)) replays[pair->first] = pair->second;
  }
  auto add = [&](Role role, const std::string& text, const std::string& group,
                 std::optional<std::uint16_t> bootstrap, std::optional<std::string> kv_events,
                 std::optional<std::string> replay = std::nullopt) {
    auto endpoint = http::Endpoint::parse(text);
    if (!endpoint) return;  // validated at load
    const std::string name = endpoint->to_string();
    for (const NodeEntry& known : entries) {
      if (known.spec.role == role && known.spec.name == name) return;
    }
    if (!kv_events) {
      if (auto it = events.find(name); it != events.end()) kv_events = it->second;
    }
    NodeEntry entry{
        NodeSpec{name, role, group},          endpoint->host, endpoint->port, endpoint->tls,
        bootstrap.value_or(c.bootstrap_port), kv_events,      std::nullopt};
    entry.spec.kv_events = kv_events.has_value();
    if (!replay) {
      if (auto it = replays.find(name); it != replays.end()) replay = it->second;
    }
    entry.kv_events_replay_endpoint = kv_events ? replay : std::nullopt;
    entries.push_back(std::move(entry));
  };
  if (c.pd_mode != PdMode::kAggregated) {
    for (const auto& text : c.prefill_endpoints)
      add(Role::kPrefill, text, "", std::nullopt, std::nullopt);
    for (const auto& node : c.prefill_nodes) {
      add(Role::kPrefill, node.endpoint, node.group, node.bootstrap_port, node.kv_events_endpoint,
          node.kv_events_replay_endpoint);
    }
  }
  for (const auto& text : c.decode_endpoints)
    add(Role::kDecode, text, "", std::nullopt, std::nullopt);
  for (const auto& node : c.decode_nodes) {
    add(Role::kDecode, node.endpoint, node.group, std::nullopt, node.kv_events_endpoint,
        node.kv_events_replay_endpoint);
  }
  return entries;
}

std::vector<std::string> secret_flags_given(int argc, const char* const* argv) {
  constexpr std::string_view kFlags[] = {"--api-keys", "--admin-token", "--engine-api-key"};
  std::vector<std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    for (const std::string_view flag : kFlags) {
      const bool match = arg == flag || (arg.substr(0, flag.size()) == flag &&
                                         arg.size() > flag.size() && arg[flag.size()] == '=');
      if (match) given.emplace_back(flag);
    }
  }
  return given;
}

Result<ListenConfig> listen_endpoint(std::string_view text) {
  // Endpoint::parse wants a port to connect to (1..65535); a listener may take port 0.
  const bool ephemeral = text.size() > 2 && text.substr(text.size() - 2) == ":0";
  auto at = ephemeral ? http::Endpoint::parse(std::string(text.substr(0, text.size() - 2)) + ":1")
                      : http::Endpoint::parse(text);
  if (!at) return std::move(at).error();
  if (at->tls) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'" + std::string(text) +
                          "': a listener is host:port (HTTPS comes from its certificate flags)");
  }
  return ListenConfig{at->host, ephemeral ? std::uint16_t{0} : at->port};
}

}  // namespace omni::proxy
