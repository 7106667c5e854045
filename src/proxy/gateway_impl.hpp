// The Gateway's internal state, shared by its translation units (routes, the request path,
// the admin API, health checks). Not a public header.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "auth.hpp"
#include "chat_bridge.hpp"
#include "dispatcher.hpp"
#include "engine_client.hpp"
#include "fleet_sync.hpp"
#include "kv_feed.hpp"
#include "model_catalog.hpp"
#include "node_events.hpp"
#include "omni/http/client.hpp"
#include "omni/http/server.hpp"
#include "omni/proxy/gateway.hpp"
#include "omni/proxy/lifecycle.hpp"
#include "omni/proxy/rewrite.hpp"
#include "prompt.hpp"
#include "proxy_metrics.hpp"
#include "recent_decisions.hpp"
#include "traffic_rules.hpp"

namespace omni::proxy {

// name → engine address, bootstrap port; replaced whole on reload.
class NodeDirectory {
 public:
  void replace(const std::vector<NodeEntry>& entries);
  std::optional<NodeEntry> find(const std::string& name) const;
  std::vector<NodeEntry> all() const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, NodeEntry> by_name_;
};

// Drained nodes and when their in-flight streams are to move elsewhere (timeouts.drain_grace):
// a stream that may migrate checks its node between events; past the deadline it is continued
// on another engine (cause "drain") instead of holding the node. Cheap when nothing drains: an
// atomic load.
class DrainDeadlines {
 public:
  void start(const std::string& node, std::chrono::steady_clock::time_point move_at);
  void stop(const std::string& node);
  bool due(const std::string& node, std::chrono::steady_clock::time_point now) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> move_at_;
  std::atomic<std::size_t> count_{0};
};

// What the admin API lists about one in-flight request.
struct InflightEntry {
  std::string request_id;
  std::string route;
  const Lifecycle* life = nullptr;
  // Set while a chat request goes to the engines as a completions request (chat_bridge.hpp).
  ChatBridge* chat = nullptr;
  TimePoint received{};
  std::atomic<std::int64_t> prefill_node{-1};
  std::atomic<std::int64_t> decode_node{-1};
};

class Inflight {
 public:
  void add(std::uint64_t id, InflightEntry* entry);
  void remove(std::uint64_t id);
  std::size_t size() const;
  // Calls `fn` for each entry with the lock held (entries cannot vanish meanwhile).
  void for_each(const std::function<void(const InflightEntry&)>& fn) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, InflightEntry*> entries_;
};

// One JSON line per request, written whole under a lock.
class AccessLog {
 public:
  Status open(const std::optional<std::string>& path);
  bool enabled() const noexcept { return file_ != nullptr; }
  void write(std::string_view line);
  ~AccessLog();

 private:
  std::mutex mu_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
};

// What the access log says about a request without a Call (models, admin, 404/405) or one
// the HTTP server refused itself.
struct PlainRequestLog {
  std::chrono::system_clock::time_point wall{};
  std::string_view request_id;
  std::string_view remote;
  std::string_view method;
  std::string_view target;
  int status = 0;
  std::string_view outcome;  // "success", "client_error", "refused", ...
  std::string_view reason;
  std::uint64_t bytes_out = 0;
  Duration elapsed{};
};

struct Gateway::Impl {
  // `clock`: the scheduler's and the lifecycle's time (tests inject a ManualClock); the
  // steady clock when null.
  explicit Impl(const Clock* injected = nullptr) : clock(injected ? *injected : steady_clock) {}
  ProxyConfig config;
  // What the secrets (secrets.hpp) decide: who may call what (checked on every request head)
  // and what the proxy presents to engines. Replaced whole on reload; read without a lock.
  struct Authority {
    AccessRules access;
    std::string engine_authorization;  // "Bearer <key>", or empty: none sent
    TrafficRules traffic;              // tenants by key, priorities and bands
    // omni_proxy_class_requests_total's child of each (band, tenant), looked up once here
    // rather than per request: [band * (tenants + 1) + tenant].
    std::vector<metrics::Counter*> class_requests;
    metrics::Counter* class_counter(std::uint8_t band, std::uint32_t tenant) const {
      const std::size_t tenants = traffic.tenant_count() + 1;
      const std::size_t at = std::size_t{band} * tenants + tenant;
      return at < class_requests.size() ? class_requests[at] : nullptr;
    }
  };
  std::atomic<std::shared_ptr<const Authority>> authority;
  SteadyClock steady_clock;
  const Clock& clock;
  metrics::Registry registry;
  ProxyMetrics metrics;
  // The fleet sync (docs/fleet.md); null when this replica runs alone. Declared before the
  // dispatcher so that it outlives it: the Scheduler holds it as its LoadObserver.
  std::unique_ptr<FleetSync> fleet;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<PromptReader> prompts;    // tokens and block hashes of each prompt
  std::unique_ptr<ChatToCompletions> chat;  // --chat-to-completions; null when off
  PrefixLookupMetrics prefix_lookups;
  NodeEventLog node_events{prefix_lookups};  // the Scheduler's observer (passes lookups on)
  ThrottledEvents request_events;            // failures, retries, migrations: one line a kind
  RecentDecisions decisions;                 // /admin/decisions and the status page
  // Per-tenant limits (tenant_limits.hpp), shared by every I/O thread; reconfigured on reload.
  struct TenantGate {
    std::mutex mu;
    TenantLimiter limiter;
  } tenants;
  std::unique_ptr<KvEventFeeds> kv_feeds;  // engines' KV events into the prefix index
  NodeDirectory directory;
  DrainDeadlines drains;
  ModelCatalog models;  // each engine's /v1/models (the health checker keeps it)
  Inflight inflight;
  AccessLog access_log;
  // TLS material (tls_files.cpp), loaded at start and re-read on reload, all or nothing.
  std::shared_ptr<http::TlsCertificate> tls;          // HTTPS on the client listener; null: plain
  std::shared_ptr<http::TlsCertificate> admin_tls;    // HTTPS on the admin listener; null: plain
  std::shared_ptr<http::TlsClientConfig> engine_tls;  // how https engines are verified
  std::unique_ptr<http::Server> server;
  std::unique_ptr<http::Server> admin_server;  // --admin-listen; null: one listener
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::uint64_t> random_state{0};
  std::function<Status()> reload_request;
  // /admin/reload reads and parses the configuration off the I/O threads, one at a time (a
  // second one meanwhile gets 409). Declared after `server`, so destroyed (joined) before it:
  // the job posts its answer to an I/O thread's executor.
  std::atomic<bool> reload_running{false};
  std::future<void> reload_job;

  // Active health checks: one thread with its own event loop and client.
  std::thread health_thread;
  std::atomic<bool> health_stop{false};

  std::uint64_t new_id() { return next_id.fetch_add(1, std::memory_order_relaxed); }
  // The context length admission assumes for requests without a max_tokens bound.
  std::uint64_t max_model_len() const {
    if (config.limits.max_model_len > 0) return config.limits.max_model_len;
    const std::uint64_t learned = models.max_model_len();
    return learned > 0 ? learned : config.limits.fallback_max_model_len;
  }
  // splitmix64 over an atomic counter: cheap, thread-safe, good enough for ids and rooms.
  std::uint64_t random64();
  std::string new_request_id();

  // The calling I/O thread's clients (one per thread, as the HTTP client requires).
  http::Client& prefill_client(boost::asio::any_io_executor executor);
  http::Client& decode_client(boost::asio::any_io_executor executor);
  // How the legs reach engines (engine_client.hpp): HTTP over the clients above, unless a test
  // puts fakes here before the first request.
  EngineClients engine_clients;
};

// Builds the whole gateway (every piece but the listener's start) from a configuration: what
// Gateway::create runs, and what in-process tests use with their own clock and engine clients.
Result<std::unique_ptr<Gateway::Impl>> make_gateway_impl(ProxyConfig config,
                                                         const Clock* clock = nullptr);

// Drains (or undrains) a node: no new work (the scheduler), and its in-flight streams move
// elsewhere once timeouts.drain_grace has passed (DrainDeadlines).
void set_draining(Gateway::Impl& gateway, const std::string& node, bool draining);

// Routes: serving, probes, metrics, admin on the traffic listener (operator routes only when
// there is no admin listener); probes, metrics and admin on the admin listener.
http::Handler make_handler(Gateway::Impl& gateway, Listener listener = Listener::kTraffic);
// Adds the engines' Authorization (engine_api_key) to a request for an engine, if one is set.
void authorize_for_engines(const Gateway::Impl& gateway, http::Request& request);
// Replaces the credentials from a configuration's secrets; the old ones stay on an error.
Status install_credentials(Gateway::Impl& gateway, const ProxyConfig& config);
// The TLS files a configuration names, loaded and checked (tls_files.cpp).
struct TlsSet {
  std::shared_ptr<http::TlsCertificate> traffic;  // null: none configured
  std::shared_ptr<http::TlsCertificate> admin;
  std::shared_ptr<http::TlsClientConfig> engines;  // always: https engines may come by reload
};
Result<TlsSet> load_tls(const ProxyConfig& config);
// At start: gateway.tls, admin_tls and engine_tls. On reload: each renewed in place (a
// listener's HTTPS is switched on or off only by a restart). A reload loads the set first, so
// one bad file refuses it and every old file keeps serving.
void install_tls(Gateway::Impl& gateway, TlsSet set);
void renew_tls(Gateway::Impl& gateway, const TlsSet& set);
// The generation routes (/v1/completions, /v1/chat/completions).
Task<void> handle_generate(Gateway::Impl& gateway, http::Request& request,
                           http::ResponseWriter& writer, Api api);
// The status page (GET /dashboard): one self-contained HTML document.
std::string_view dashboard_page() noexcept;
// Admin API under /admin/.
Task<void> handle_admin(Gateway::Impl& gateway, http::Request& request,
                        http::ResponseWriter& writer);
// Starts / stops the active health checker thread.
void start_health_checks(Gateway::Impl& gateway);
void stop_health_checks(Gateway::Impl& gateway);

http::Response json_response(int status, std::string body);

// The access-log line and the status metric of a request without a Call.
void log_plain_request(Gateway::Impl& g, const PlainRequestLog& entry);
// The same for a request the HTTP server answered itself (ServerHooks::on_refused).
void log_refused(Gateway::Impl& g, const http::RefusedRequest& refused);

}  // namespace omni::proxy
