// Gateway lifecycle (create, start, reload, stop) and the small shared pieces: node
// directory, in-flight registry, access log, per-thread clients, gauges.
#include <fmt/format.h>
#include <algorithm>
#include <boost/asio/any_io_executor.hpp>
#include <utility>

#include "gateway_impl.hpp"
#include "omni/log/log.hpp"
#include "process_metrics.hpp"
#include "secrets.hpp"

namespace omni::proxy {
namespace {

TrafficOptions traffic_options(const TrafficConfig& c) {
  TrafficOptions o;
  o.bands = c.bands;
  o.order = c.band_order;
  o.aging = c.aging;
  return o;
}

SchedulerOptions scheduler_options(const ProxyConfig& c) {
  SchedulerOptions o;
  o.queue_capacity = c.limits.queue_capacity;
  o.queue_timeout = c.timeouts.queue;
  o.node_limits = {c.limits.node_max_outstanding_tokens, c.limits.node_max_running};
  o.failures_to_eject = c.health.failures_to_eject;
  o.ejection_time = c.health.ejection_time;
  o.max_ejection_time = c.health.max_ejection_time;
  o.max_ejection_percent = c.health.max_ejection_percent;
  o.aggregated = c.pd_mode == PdMode::kAggregated;
  o.block_size = c.block_size;
  o.prefix.enabled = c.prefix_index.enabled;
  o.prefix.predicted_ttl = c.prefix_index.predicted_ttl;
  o.prefix.stale_after = c.prefix_index.stale_after;
  o.prefix.max_entries = c.prefix_index.max_entries;
  o.traffic = traffic_options(c.traffic);
  return o;
}

PromptOptions prompt_options(const ProxyConfig& c) {
  return {c.tokenizer, c.block_size, c.hash_algo, c.hash_seed};
}

http::ServerOptions server_options(const ProxyConfig& c) {
  http::ServerOptions o;
  o.host = c.listen.host;
  o.port = c.listen.port;
  o.io_threads = c.workers;
  o.max_connections = c.limits.max_connections;
  o.max_header_bytes = c.limits.max_header_bytes;
  o.max_body_bytes = c.limits.max_body_bytes;
  o.stream_backlog_bytes = c.limits.stream_backlog_bytes;
  o.idle_timeout = c.timeouts.client_idle;
  o.header_timeout = c.timeouts.client_header;
  o.body_timeout = c.timeouts.client_body;
  o.write_timeout = c.timeouts.client_write;
  o.shutdown_grace = c.timeouts.shutdown_grace;
  o.server_name = "omni-proxy";
  return o;
}

// The admin listener: operators' requests only, so few connections and small bodies; one
// thread, apart from the traffic's I/O threads (a scrape or a reload never waits behind them).
http::ServerOptions admin_server_options(const ProxyConfig& c, const ListenConfig& at) {
  http::ServerOptions o = server_options(c);
  o.host = at.host;
  o.port = at.port;
  o.io_threads = 1;
  o.max_connections = 64;
  o.max_body_bytes = 1 << 20;
  return o;
}

std::unique_ptr<http::Server> make_server(Gateway::Impl& g, http::ServerOptions options,
                                          Listener listener) {
  http::ServerHooks hooks;
  Gateway::Impl* gp = &g;
  hooks.screen_head = [gp, listener](const http::Request& head) {
    const std::shared_ptr<const Gateway::Impl::Authority> authority = gp->authority.load();
    return screen_request_head(authority->access, head, listener);
  };
  hooks.on_refused = [gp](const http::RefusedRequest& refused) { log_refused(*gp, refused); };
  return std::make_unique<http::Server>(std::move(options), make_handler(g, listener),
                                        std::move(hooks));
}

std::string node_list(const std::vector<NodeEntry>& entries, Role role) {
  std::string out;
  for (const NodeEntry& entry : entries) {
    if (entry.spec.role != role) continue;
    if (!out.empty()) out += ", ";
    out += entry.tls ? "https://" + entry.spec.name : entry.spec.name;
    if (!entry.spec.group.empty()) out += " [" + entry.spec.group + "]";
  }
  return out.empty() ? "none" : out;
}

// What an operator checks first when something is off: the effective set-up, in one line each.
void say_setup(const Gateway::Impl& g) {
  const ProxyConfig& c = g.config;
  const auto entries = node_entries(c);
  auto logger = log::get("proxy");
  logger->info("pd_mode {}, policy {}; prefill: {}; decode: {}", pd_mode_name(c.pd_mode), c.policy,
               node_list(entries, Role::kPrefill), node_list(entries, Role::kDecode));
  logger->info(
      "limits: queue {} requests, per node {} outstanding tokens and {} running; retries: {} "
      "prefill, {} decode; migration attempts {}",
      c.limits.queue_capacity, c.limits.node_max_outstanding_tokens, c.limits.node_max_running,
      c.retries.prefill_attempts, c.retries.decode_attempts, c.migration_max_attempts);
  const auto authority = g.authority.load();
  if (g.tls) logger->info("HTTPS: certificate {}", g.tls->describe());
  if (g.admin_tls) logger->info("admin HTTPS: certificate {}", g.admin_tls->describe());
  for (const NodeEntry& entry : entries) {
    if (!entry.tls) continue;
    logger->info("engines over https: {}", g.engine_tls->describe());
    break;
  }
  logger->info("access: /v1/* {}; admin routes and /metrics {}; engine key {}",
               authority->access.api_keys.empty() ? "open (no client key)" : "need a client key",
               c.admin_listen                    ? "on " + *c.admin_listen
               : authority->access.admin.empty() ? std::string("for local clients only")
                                                 : std::string("need the admin token off-host"),
               authority->engine_authorization.empty() ? "none" : "set");
}

std::vector<NodeSpec> specs_of(const std::vector<NodeEntry>& entries) {
  std::vector<NodeSpec> specs;
  for (const NodeEntry& entry : entries) specs.push_back(entry.spec);
  return specs;
}

Status export_gauges(Gateway::Impl& g) {
  Status s = g.registry.gauge_callback(
      "omni_proxy_queue_waiting", "Requests waiting in the proxy for a node.", {},
      [&g](metrics::Emitter& e) {
        e.emit({}, static_cast<double>(g.dispatcher->snapshot().waiting));
      });
  if (!s) return s;
  s = g.registry.gauge_callback(
      "omni_proxy_requests_in_flight", "Requests being served.", {},
      [&g](metrics::Emitter& e) { e.emit({}, static_cast<double>(g.inflight.size())); });
  if (!s) return s;
  s = g.registry.gauge_callback("omni_proxy_node_outstanding_tokens",
                                "Tokens dispatched to a node and not yet released.",
                                {"pool", "node"}, [&g](metrics::Emitter& e) {
                                  for (const NodeStatus& n : g.dispatcher->snapshot().nodes) {
                                    e.emit({role_name(n.spec.role), n.spec.name},
                                           static_cast<double>(n.load.outstanding_tokens));
                                  }
                                });
  if (!s) return s;
  s = g.registry.gauge_callback(
      "omni_proxy_node_running", "Requests running on a node.", {"pool", "node"},
      [&g](metrics::Emitter& e) {
        for (const NodeStatus& n : g.dispatcher->snapshot().nodes) {
          e.emit({role_name(n.spec.role), n.spec.name}, static_cast<double>(n.load.running));
        }
      });
  if (!s) return s;
  s = g.registry.gauge_callback(
      "omni_proxy_fleet_connected",
      "1 while the fleet sync is connected to NATS (0 when off or cut off).", {},
      [&g](metrics::Emitter& e) { e.emit({}, g.fleet && g.fleet->connected() ? 1.0 : 0.0); });
  if (!s) return s;
  s = g.registry.gauge_callback(
      "omni_proxy_fleet_replicas", "Other replicas of the fleet whose load counts here.", {},
      [&g](metrics::Emitter& e) {
        e.emit({}, g.fleet ? static_cast<double>(g.fleet->live_replicas()) : 0.0);
      });
  if (!s) return s;
  s = g.registry.gauge_callback(
      "omni_proxy_node_fleet_running",
      "Requests the other replicas of the fleet have running on a node.", {"pool", "node"},
      [&g](metrics::Emitter& e) {
        for (const NodeStatus& n : g.dispatcher->snapshot().nodes) {
          e.emit({role_name(n.spec.role), n.spec.name}, static_cast<double>(n.fleet.running));
        }
      });
  if (!s) return s;
  return g.registry.gauge_callback(
      "omni_proxy_node_usable",
      "1 when a node takes new requests (up, circuit closed, not draining).", {"pool", "node"},
      [&g](metrics::Emitter& e) {
        for (const NodeStatus& n : g.dispatcher->snapshot().nodes) {
          const bool usable = !n.draining && !n.removed &&
                              (n.health == NodeHealth::kUp || n.health == NodeHealth::kTrial);
          e.emit({role_name(n.spec.role), n.spec.name}, usable ? 1.0 : 0.0);
        }
      });
}

}  // namespace

void DrainDeadlines::start(const std::string& node, std::chrono::steady_clock::time_point move_at) {
  const std::lock_guard lock(mu_);
  move_at_.insert_or_assign(node, move_at);
  count_.store(move_at_.size(), std::memory_order_relaxed);
}

void DrainDeadlines::stop(const std::string& node) {
  const std::lock_guard lock(mu_);
  move_at_.erase(node);
  count_.store(move_at_.size(), std::memory_order_relaxed);
}

bool DrainDeadlines::due(const std::string& node, std::chrono::steady_clock::time_point now) const {
  if (count_.load(std::memory_order_relaxed) == 0) return false;
  const std::lock_guard lock(mu_);
  const auto it = move_at_.find(node);
  return it != move_at_.end() && now >= it->second;
}

void set_draining(Gateway::Impl& g, const std::string& node, bool draining) {
  g.dispatcher->drain(node, draining);
  if (!draining) {
    log::get("proxy")->info("node {} undrained: it takes new requests again", node);
    g.drains.stop(node);
    return;
  }
  log::get("proxy")->info(
      "node {} drained: no new requests; its streams may finish within {:g}s, then migrate", node,
      std::chrono::duration<double>(g.config.timeouts.drain_grace).count());
  g.drains.start(node, std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               g.config.timeouts.drain_grace));
}

void NodeDirectory::replace(const std::vector<NodeEntry>& entries) {
  std::unique_lock lock(mu_);
  by_name_.clear();
  for (const NodeEntry& entry : entries) by_name_[entry.spec.name] = entry;
}

std::optional<NodeEntry> NodeDirectory::find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<NodeEntry> NodeDirectory::all() const {
  std::shared_lock lock(mu_);
  std::vector<NodeEntry> out;
  for (const auto& [name, entry] : by_name_) out.push_back(entry);
  return out;
}

void Inflight::add(std::uint64_t id, InflightEntry* entry) {
  std::lock_guard lock(mu_);
  entries_[id] = entry;
}
void Inflight::remove(std::uint64_t id) {
  std::lock_guard lock(mu_);
  entries_.erase(id);
}
std::size_t Inflight::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}
void Inflight::for_each(const std::function<void(const InflightEntry&)>& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : entries_) fn(*entry);
}

Status AccessLog::open(const std::optional<std::string>& path) {
  if (!path) return {};
  if (*path == "-") {
    file_ = stdout;
    return {};
  }
  file_ = std::fopen(path->c_str(), "a");
  if (!file_) return make_error(ErrorCode::kIo, "cannot open the access log " + *path);
  owned_ = true;
  return {};
}

void AccessLog::write(std::string_view line) {
  if (!file_) return;
  std::lock_guard lock(mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

AccessLog::~AccessLog() {
  if (owned_ && file_) std::fclose(file_);
}

std::uint64_t Gateway::Impl::random64() {
  std::uint64_t z = random_state.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed) +
                    0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string Gateway::Impl::new_request_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  const std::uint64_t a = random64();
  const std::uint64_t b = random64();
  for (int i = 0; i < 16; ++i) {
    id[static_cast<std::size_t>(i)] = kHex[(a >> (4 * i)) & 0xf];
    id[static_cast<std::size_t>(16 + i)] = kHex[(b >> (4 * i)) & 0xf];
  }
  return id;
}

namespace {
http::ClientOptions client_options(const Gateway::Impl& g, Duration read_timeout) {
  const ProxyConfig& c = g.config;
  http::ClientOptions o;
  o.tls = g.engine_tls;
  o.connect_timeout = c.timeouts.connect;
  o.read_timeout = read_timeout;
  o.max_idle_per_endpoint = 256;
  o.keep_timers_armed = true;  // the I/O threads run until stop(), which stops their io_context
  return o;
}
// One client per I/O thread and leg kind; a thread serves one Gateway only.
thread_local std::unique_ptr<http::Client> t_prefill_client;
thread_local std::unique_ptr<http::Client> t_decode_client;
}  // namespace

http::Client& Gateway::Impl::prefill_client(boost::asio::any_io_executor executor) {
  if (!t_prefill_client) {
    t_prefill_client =
        std::make_unique<http::Client>(executor, client_options(*this, config.timeouts.prefill));
  }
  return *t_prefill_client;
}

http::Client& Gateway::Impl::decode_client(boost::asio::any_io_executor executor) {
  if (!t_decode_client) {
    t_decode_client = std::make_unique<http::Client>(
        executor, client_options(*this, config.timeouts.decode_idle));
  }
  return *t_decode_client;
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gateway::~Gateway() { stop(); }

// The live way to engines: HTTP over each I/O thread's pools (a prefill pool whose read
// deadline is the prefill leg's, a decode pool whose is the decode stream's idle gap).
class HttpEngineClient final : public EngineClient {
 public:
  HttpEngineClient(const Gateway::Impl& g, http::Client& client) : g_(g), client_(client) {}
  // The endpoint is named, not a temporary: GCC 12 destroys temporaries bound to reference
  // parameters inside a co_await expression too early.
  Task<Result<http::Response>> send(const NodeEntry& node, http::Request request,
                                    http::Abort* abort) override {
    const http::Endpoint to{node.host, node.port, node.tls};
    authorize_for_engines(g_, request);
    auto call = client_.send(to, std::move(request), abort);
    co_return co_await std::move(call);
  }
  Task<Result<std::unique_ptr<http::ResponseStream>>> open(const NodeEntry& node,
                                                           http::Request request,
                                                           http::Abort* abort) override {
    const http::Endpoint to{node.host, node.port, node.tls};
    authorize_for_engines(g_, request);
    auto call = client_.open(to, std::move(request), abort);
    co_return co_await std::move(call);
  }

 private:
  const Gateway::Impl& g_;
  http::Client& client_;
};

thread_local std::unique_ptr<HttpEngineClient> t_prefill_engines;
thread_local std::unique_ptr<HttpEngineClient> t_decode_engines;

EngineClients http_engine_clients(Gateway::Impl& g) {
  return [&g](const boost::asio::any_io_executor& executor, Role role) -> EngineClient& {
    auto& slot = role == Role::kPrefill ? t_prefill_engines : t_decode_engines;
    if (!slot) {
      slot = std::make_unique<HttpEngineClient>(
          g, role == Role::kPrefill ? g.prefill_client(executor) : g.decode_client(executor));
    }
    return *slot;
  };
}

Result<std::unique_ptr<Gateway>> Gateway::create(ProxyConfig config) {
  auto impl = make_gateway_impl(std::move(config));
  if (!impl) return std::move(impl).error();
  return std::unique_ptr<Gateway>(new Gateway(std::move(*impl)));
}

Result<std::unique_ptr<Gateway::Impl>> make_gateway_impl(ProxyConfig config, const Clock* clock) {
  auto impl = std::make_unique<Gateway::Impl>(clock);
  impl->config = std::move(config);
  impl->engine_clients = http_engine_clients(*impl);
  auto policy = sched::make_placement_policy(impl->config.policy, policy_settings(impl->config));
  if (!policy) return std::move(policy).error();
  auto prompts = PromptReader::create(prompt_options(impl->config));
  if (!prompts) return std::move(prompts).error();
  impl->prompts = std::move(*prompts);
  auto metrics = ProxyMetrics::create(impl->registry);
  if (!metrics) return std::move(metrics).error();
  impl->metrics = *metrics;
  if (impl->config.chat_to_completions) {
    // The tokenizer PromptReader loaded (config validation makes --tokenizer required here).
    auto chat = ChatToCompletions::create(impl->prompts->tokenizer(), impl->metrics.chat_converted,
                                          impl->metrics.chat_not_converted);
    if (!chat) return std::move(chat).error();
    impl->chat = std::move(*chat);
  }
  if (Status s = impl->access_log.open(impl->config.access_log); !s) return std::move(s).error();
  impl->random_state =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  SchedulerOptions options = scheduler_options(impl->config);
  options.observer = &impl->node_events;
  auto node_metrics = register_node_metrics(impl->registry);
  if (!node_metrics) return std::move(node_metrics).error();
  impl->node_events.bind(*node_metrics, impl->config.traffic.bands);
  if (Status s = export_process_metrics(impl->registry); !s) return std::move(s).error();
  if (impl->config.fleet.nats_url) {
    impl->fleet = std::make_unique<FleetSync>(
        impl->config.fleet, fleet_config_digest(impl->config, impl->prompts->root().hex()),
        impl->config.listen.port, impl->clock,
        FleetMetrics{impl->metrics.fleet_messages, impl->metrics.fleet_dropped});
    options.load_observer = impl->fleet.get();
  }
  impl->dispatcher = std::make_unique<Dispatcher>(
      impl->clock, options, std::move(*policy), impl->config.scheduler_tick,
      DispatcherMetrics{impl->metrics.scheduling_latency, impl->metrics.scheduler_pass});
  const auto entries = node_entries(impl->config);
  impl->directory.replace(entries);
  impl->dispatcher->set_nodes(specs_of(entries));
  if (Status s = export_gauges(*impl); !s) return std::move(s).error();
  Status prefix = export_prefix_metrics(impl->registry, *impl->dispatcher, impl->prefix_lookups);
  if (!prefix) return std::move(prefix).error();
  impl->kv_feeds = std::make_unique<KvEventFeeds>(*impl->dispatcher);
  if (Status s = install_credentials(*impl, impl->config); !s) return std::move(s).error();
  auto tls = load_tls(impl->config);
  if (!tls) return std::move(tls).error();
  install_tls(*impl, std::move(*tls));
  http::ServerOptions traffic = server_options(impl->config);
  traffic.tls = impl->tls;
  impl->server = make_server(*impl, std::move(traffic), Listener::kTraffic);
  if (impl->config.admin_listen) {
    const auto at = listen_endpoint(*impl->config.admin_listen);
    if (!at) return std::move(at).error();
    http::ServerOptions admin = admin_server_options(impl->config, *at);
    admin.tls = impl->admin_tls;
    impl->admin_server = make_server(*impl, std::move(admin), Listener::kAdmin);
  }
  return impl;
}

Status install_credentials(Gateway::Impl& g, const ProxyConfig& config) {
  auto secrets = load_secrets(config, process_environment());
  if (!secrets) return std::move(secrets).error();
  auto traffic = TrafficRules::load(config.traffic);
  if (!traffic) return std::move(traffic).error();
  auto authority = std::make_shared<Gateway::Impl::Authority>();
  // A tenant's keys are client keys too.
  std::vector<std::string> keys = secrets->api_keys;
  keys.insert(keys.end(), traffic->keys().begin(), traffic->keys().end());
  authority->access.api_keys = Credentials(keys);
  {
    std::lock_guard lock(g.tenants.mu);
    g.tenants.limiter.configure(traffic->limits(), g.clock.now());
  }
  authority->traffic = std::move(*traffic);
  const TrafficRules& rules = authority->traffic;
  for (std::size_t band = 0; band < rules.band_count(); ++band) {
    for (std::uint32_t tenant = 0; tenant <= rules.tenant_count(); ++tenant) {
      auto child = g.metrics.class_requests->with(
          {rules.band_name(static_cast<std::uint8_t>(band)), rules.tenant_name(tenant)});
      authority->class_requests.push_back(child ? *child : nullptr);
    }
  }
  if (secrets->admin_token) authority->access.admin = Credentials({*secrets->admin_token});
  authority->access.admin_listener = config.admin_listen.has_value();
  if (secrets->engine_api_key)
    authority->engine_authorization = "Bearer " + *secrets->engine_api_key;
  g.authority.store(std::move(authority));
  return {};
}

void authorize_for_engines(const Gateway::Impl& g, http::Request& request) {
  const std::shared_ptr<const Gateway::Impl::Authority> authority = g.authority.load();
  if (!authority || authority->engine_authorization.empty()) return;
  request.headers.set("Authorization", authority->engine_authorization);
}

Status Gateway::start() {
  impl_->dispatcher->start();
  if (impl_->fleet) {
    if (Status s = impl_->fleet->start(*impl_->dispatcher); !s) {
      impl_->dispatcher->stop();
      return s;
    }
  }
  if (Status s = impl_->server->start(); !s) {
    impl_->dispatcher->stop();
    return s;
  }
  if (impl_->admin_server) {
    if (Status s = impl_->admin_server->start(); !s) {
      impl_->server->stop();
      impl_->dispatcher->stop();
      return make_error(s.error().code,
                        "admin listener " + *impl_->config.admin_listen + ": " + s.error().message);
    }
  }
  say_setup(*impl_);
  start_health_checks(*impl_);
  if (Status s = impl_->kv_feeds->follow(node_entries(impl_->config)); !s) {
    stop();
    return s;
  }
  return {};
}

std::uint16_t Gateway::port() const noexcept { return impl_->server->port(); }

std::optional<std::uint16_t> Gateway::admin_port() const noexcept {
  if (!impl_->admin_server) return std::nullopt;
  return impl_->admin_server->port();
}

namespace {

// Which nodes a reload adds and removes ("+10.0.0.3:8000 (decode)"), or that the pools stay.
void say_pool_changes(const std::vector<NodeEntry>& before, const std::vector<NodeEntry>& after) {
  auto has = [](const std::vector<NodeEntry>& list, const NodeEntry& entry) {
    return std::any_of(list.begin(), list.end(), [&](const NodeEntry& e) {
      return e.spec.name == entry.spec.name && e.spec.role == entry.spec.role;
    });
  };
  std::string changes;
  auto add = [&](char sign, const NodeEntry& e) {
    changes += fmt::format("{}{}{} ({})", changes.empty() ? "" : ", ", sign, e.spec.name,
                           e.spec.role == Role::kPrefill ? "prefill" : "decode");
  };
  for (const NodeEntry& e : after) {
    if (!has(before, e)) add('+', e);
  }
  for (const NodeEntry& e : before) {
    if (!has(after, e)) add('-', e);
  }
  log::get("proxy")->info("reload: {}", changes.empty() ? "pools unchanged" : changes);
}

}  // namespace

Status Gateway::reload(const ProxyConfig& config) {
  // The pools and the secrets change: in-flight requests keep their leases; the scheduler keeps
  // the load and health of nodes that stay, and forgets removed ones once their load drains.
  // Secrets and TLS files first: one that cannot be read refuses the whole reload (the old
  // ones keep serving).
  auto tls = load_tls(config);
  if (!tls) {
    log::get("proxy")->error("reload refused: {} (the current TLS files keep serving)",
                             tls.error().message);
    return std::move(tls).error();
  }
  if (Status s = install_credentials(*impl_, config); !s) {
    log::get("proxy")->error("reload refused: {}", s.error().message);
    return s;
  }
  renew_tls(*impl_, *tls);
  auto entries = node_entries(config);
  say_pool_changes(impl_->directory.all(), entries);
  std::vector<NodeEntry> merged = entries;
  // Removed nodes must stay resolvable for the requests still using them.
  for (const NodeEntry& old : impl_->directory.all()) {
    bool kept = false;
    for (const NodeEntry& e : entries) kept = kept || e.spec.name == old.spec.name;
    if (!kept) merged.push_back(old);
  }
  impl_->directory.replace(merged);
  impl_->dispatcher->set_nodes(specs_of(entries));
  (void)impl_->dispatcher->post(
      [impl = impl_.get(), traffic = config.traffic](Scheduler& scheduler) {
        scheduler.set_traffic(traffic_options(traffic));
        impl->node_events.set_bands(traffic.bands);
      });
  if (Status s = impl_->kv_feeds->follow(entries); !s) {
    log::get("proxy")->error("reload: {}", s.error().message);
  }
  log::get("proxy")->info("pools reloaded: {} nodes", entries.size());
  return {};
}

void Gateway::on_reload_request(std::function<Status()> callback) {
  impl_->reload_request = std::move(callback);
}

void Gateway::stop() {
  if (!impl_) return;
  stop_health_checks(*impl_);
  if (impl_->kv_feeds) impl_->kv_feeds->stop();
  if (impl_->server) impl_->server->stop();
  if (impl_->admin_server) impl_->admin_server->stop();
  if (impl_->fleet) impl_->fleet->stop();  // before the dispatcher: it posts to it
  if (impl_->dispatcher) impl_->dispatcher->stop();
}

metrics::Registry& Gateway::registry() noexcept { return impl_->registry; }

}  // namespace omni::proxy
