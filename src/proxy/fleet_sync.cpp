// The fleet sync over NATS (fleet_sync.hpp).
#include "fleet_sync.hpp"

#include <nats/nats.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <random>

#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

// Every pending message a slow master leaves queued in the subscription, at most.
constexpr int kPendingMessages = 65536;
constexpr int kPendingBytes = 64 << 20;
// The leading blocks of a placement that are shared: what a follow-up turn matches first, and a
// message well under NATS's default 1 MB payload limit (256k tokens at block size 16).
constexpr std::size_t kSharedBlocks = 16384;

std::string hex64(std::uint64_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kHex[v & 15];
  return out;
}

std::string default_replica_id(std::uint16_t port) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::string name = host[0] ? host : "omni-proxy";
  return name + ":" + (port != 0 ? std::to_string(port) : "pid" + std::to_string(getpid()));
}

std::vector<std::string> split_urls(const std::string& urls) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= urls.size()) {
    const std::size_t comma = urls.find(',', start);
    const std::string url =
        urls.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!url.empty()) out.push_back(url);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Error nats_error(std::string_view what, natsStatus status) {
  return make_error(ErrorCode::kUnavailable,
                    "fleet sync: " + std::string(what) + ": " + natsStatus_GetText(status));
}

void on_message(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  static_cast<FleetSync*>(closure)->on_raw_message(natsMsg_GetData(msg),
                                                   natsMsg_GetDataLength(msg));
  natsMsg_Destroy(msg);
}
void on_disconnected(natsConnection*, void* closure) {
  static_cast<FleetSync*>(closure)->on_connection(false);
}
void on_connected(natsConnection*, void* closure) {
  static_cast<FleetSync*>(closure)->on_connection(true);
}
void on_error(natsConnection*, natsSubscription*, natsStatus err, void* closure) {
  static_cast<FleetSync*>(closure)->on_async_error(natsStatus_GetText(err));
}

}  // namespace

struct FleetSync::Nats {
  natsOptions* options = nullptr;
  natsConnection* connection = nullptr;
  natsSubscription* subscription = nullptr;
  ~Nats() {
    if (subscription) natsSubscription_Destroy(subscription);
    if (connection) natsConnection_Destroy(connection);
    if (options) natsOptions_Destroy(options);
  }
};

std::string fleet_config_digest(const ProxyConfig& c, std::string_view hash_root) {
  // FNV-1a over the settings that must agree: the same on every machine and build.
  const std::string text = c.policy + '|' + std::string(pd_mode_name(c.pd_mode)) + '|' +
                           std::to_string(c.block_size) + '|' + c.hash_algo + '|' +
                           std::string(hash_root);
  std::uint64_t h = 1469598103934665603ull;
  for (const char ch : text) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return hex64(h);
}

FleetSync::FleetSync(FleetConfig config, std::string config_digest, std::uint16_t listen_port,
                     const Clock& clock, FleetMetrics metrics)
    : config_(std::move(config)),
      digest_(std::move(config_digest)),
      self_(config_.replica_id ? *config_.replica_id : default_replica_id(listen_port)),
      subject_(config_.name + ".load"),
      clock_(clock),
      metrics_(metrics),
      view_(config_.name, self_, digest_, config_.lease) {
  std::random_device random;
  epoch_ = hex64((static_cast<std::uint64_t>(random()) << 32) ^ random());
}

FleetSync::~FleetSync() { stop(); }

Status FleetSync::start(Dispatcher& dispatcher) {
  dispatcher_ = &dispatcher;
  nats_ = std::make_unique<Nats>();
  if (natsStatus s = natsOptions_Create(&nats_->options); s != NATS_OK) {
    return nats_error("options", s);
  }
  natsOptions* o = nats_->options;
  const std::vector<std::string> urls = split_urls(config_.nats_url.value_or(""));
  std::vector<const char*> servers;
  for (const std::string& url : urls) servers.push_back(url.c_str());
  natsStatus s = natsOptions_SetServers(o, servers.data(), static_cast<int>(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetName(o, ("omni-proxy " + self_).c_str());
  if (s == NATS_OK) s = natsOptions_SetNoEcho(o, true);  // never our own messages back
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(o, 250);
  if (s == NATS_OK) s = natsOptions_SetTimeout(o, 2000);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(o, 1000);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(o, 2);
  if (s == NATS_OK) s = natsOptions_SetReconnectBufSize(o, 1 << 20);
  if (s == NATS_OK) s = natsOptions_SetMaxPendingMsgs(o, kPendingMessages);
  if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(o, on_disconnected, this);
  if (s == NATS_OK) s = natsOptions_SetReconnectedCB(o, on_connected, this);
  if (s == NATS_OK) s = natsOptions_SetErrorHandler(o, on_error, this);
  // A server that is not up yet: connect in the background, as after a disconnection.
  if (s == NATS_OK) s = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, this);
  if (s != NATS_OK) return nats_error("options", s);
  s = natsConnection_Connect(&nats_->connection, o);
  if (s == NATS_OK) {
    on_connection(true);
  } else if (s != NATS_NOT_YET_CONNECTED) {
    return nats_error("connect to " + config_.nats_url.value_or(""), s);
  } else {
    log::get("proxy")->warn(
        "fleet sync: {} not reachable yet; routing on this replica's own "
        "load until it is",
        config_.nats_url.value_or(""));
  }
  s = natsConnection_Subscribe(&nats_->subscription, nats_->connection, subject_.c_str(),
                               on_message, this);
  if (s == NATS_OK) {
    s = natsSubscription_SetPendingLimits(nats_->subscription, kPendingMessages, kPendingBytes);
  }
  if (s != NATS_OK) return nats_error("subscribe to " + subject_, s);
  ticker_ = std::thread([this] { ticker_loop(); });
  log::get("proxy")->info(
      "fleet sync: replica {} of fleet {} on {} (lease {} ms)", self_, config_.name,
      config_.nats_url.value_or(""),
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.lease).count());
  return {};
}

void FleetSync::stop() {
  {
    const std::lock_guard lock(ticker_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  ticker_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (!nats_) return;
  if (nats_->connection && connected()) {
    publish(fleet::MessageKind::kBye, {});
    (void)natsConnection_FlushTimeout(nats_->connection, 500);
  }
  if (nats_->subscription) (void)natsSubscription_Unsubscribe(nats_->subscription);
  if (nats_->connection) natsConnection_Close(nats_->connection);
  nats_.reset();  // no callback runs after this
}

void FleetSync::on_load_change(const NodeSpec& node, std::int64_t tokens,
                               std::int64_t prompt_tokens, std::int32_t running) {
  publish(fleet::MessageKind::kDelta, {{node.name, tokens, prompt_tokens, running}});
}

void FleetSync::on_predicted_blocks(const NodeSpec& node, std::span<const std::uint64_t> hashes) {
  fleet::FleetMessage m;
  m.kind = fleet::MessageKind::kPrefix;
  m.prefix_node = node.name;
  const std::size_t shared = std::min(hashes.size(), kSharedBlocks);
  m.blocks.assign(hashes.begin(), hashes.begin() + static_cast<std::ptrdiff_t>(shared));
  publish(std::move(m));
}

void FleetSync::publish(fleet::MessageKind kind, std::vector<fleet::NodeLoadEntry> loads) {
  fleet::FleetMessage m;
  m.kind = kind;
  m.loads = std::move(loads);
  publish(std::move(m));
}

void FleetSync::publish(fleet::FleetMessage m) {
  if (!nats_ || !nats_->connection) return;
  const fleet::MessageKind kind = m.kind;
  m.fleet = config_.name;
  m.replica = self_;
  m.epoch = epoch_;
  m.config = digest_;
  m.seq = seq_.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::string text = fleet::encode(m);
  // While disconnected the client buffers up to its reconnect buffer, then refuses: the lost
  // deltas are corrected by the next snapshot the others receive.
  const natsStatus s = natsConnection_Publish(nats_->connection, subject_.c_str(), text.data(),
                                              static_cast<int>(text.size()));
  if (s != NATS_OK) {
    count_dropped("publish_failed");
    return;
  }
  count_message("out", kind);
}

void FleetSync::on_raw_message(const char* data, int size) {
  auto message = fleet::decode(std::string_view(data, static_cast<std::size_t>(size)));
  if (!message) {
    count_dropped("malformed");
    return;
  }
  count_message("in", message->kind);
  if (!dispatcher_->post([this, m = std::move(*message)](Scheduler& s) { apply(s, m); })) {
    count_dropped("queue_full");
  }
}

void FleetSync::on_connection(bool up) {
  const bool was = connected_.exchange(up, std::memory_order_relaxed);
  if (was == up) return;
  if (up) {
    log::get("proxy")->info("fleet sync: connected to NATS");
  } else {
    log::get("proxy")->warn(
        "fleet sync: NATS connection lost; routing on this replica's own "
        "load until it is back");
  }
}

void FleetSync::on_async_error(std::string_view what) {
  count_dropped("slow_consumer");
  log::get("proxy")->warn("fleet sync: {}", what);
}

void FleetSync::count_dropped(std::string_view reason) {
  if (!metrics_.dropped) return;
  if (auto c = metrics_.dropped->with({reason})) (*c)->inc();
}

void FleetSync::count_message(std::string_view direction, fleet::MessageKind kind) {
  if (!metrics_.messages) return;
  if (auto c = metrics_.messages->with({direction, fleet::message_kind_name(kind)})) (*c)->inc();
}

void FleetSync::apply(Scheduler& scheduler, const fleet::FleetMessage& message) {
  const fleet::Verdict verdict = view_.apply(message, clock_.now());
  if (verdict != fleet::Verdict::kApplied) {
    count_dropped(fleet::verdict_name(verdict));
    if (verdict != fleet::Verdict::kConfigMismatch) return;
  }
  if (message.kind == fleet::MessageKind::kPrefix) {
    if (verdict == fleet::Verdict::kApplied) {
      scheduler.apply_predicted_blocks(message.prefix_node, message.blocks);
    }
  } else if (message.kind == fleet::MessageKind::kDelta && verdict == fleet::Verdict::kApplied) {
    std::vector<std::string> touched;
    touched.reserve(message.loads.size());
    for (const fleet::NodeLoadEntry& l : message.loads) touched.push_back(l.node);
    push_totals(scheduler, &touched);
  } else {
    push_totals(scheduler, nullptr);
  }
  live_.store(view_.live(), std::memory_order_relaxed);
}

// Tells the Scheduler each engine's fleet load that changed (`only`: just these engines).
void FleetSync::push_totals(Scheduler& scheduler, const std::vector<std::string>* only) {
  const auto totals = view_.totals();
  auto tell = [&](const std::string& node) {
    FleetLoad load;
    if (auto it = totals.find(node); it != totals.end()) {
      load = FleetLoad{it->second.tokens, it->second.prompt, it->second.running};
    }
    FleetLoad& last = pushed_[node];
    if (last == load) return;
    last = load;
    scheduler.report_fleet_load(node, load);
  };
  if (only) {
    for (const std::string& node : *only) tell(node);
    return;
  }
  for (const auto& [node, load] : totals) tell(node);
  std::vector<std::string> gone;
  for (const auto& [node, load] : pushed_) {
    if (!totals.contains(node)) gone.push_back(node);
  }
  for (const std::string& node : gone) tell(node);
  std::erase_if(pushed_, [](const auto& e) { return e.second == FleetLoad{}; });
}

void FleetSync::tick(Scheduler& scheduler) {
  std::vector<fleet::NodeLoadEntry> own;
  for (const NodeStatus& n : scheduler.nodes()) {
    if (n.load.running == 0 && n.load.outstanding_tokens == 0) continue;
    own.push_back({n.spec.name, static_cast<std::int64_t>(n.load.outstanding_tokens),
                   static_cast<std::int64_t>(n.outstanding_prompt_tokens),
                   static_cast<std::int64_t>(n.load.running)});
  }
  if (connected()) publish(fleet::MessageKind::kSnapshot, std::move(own));
  const TimePoint now = clock_.now();
  if (view_.expire(now) > 0) push_totals(scheduler, nullptr);
  live_.store(view_.live(), std::memory_order_relaxed);
  const std::lock_guard lock(admin_mu_);
  admin_replicas_ = view_.replicas(now);
}

void FleetSync::ticker_loop() {
  std::unique_lock lock(ticker_mu_);
  while (!stopping_) {
    ticker_cv_.wait_for(lock, config_.snapshot_period);
    if (stopping_) break;
    lock.unlock();
    if (!dispatcher_->post([this](Scheduler& s) { tick(s); })) count_dropped("queue_full");
    lock.lock();
  }
}

std::string FleetSync::admin_json() const {
  json::object body;
  body["fleet"] = config_.name;
  body["replica"] = self_;
  body["epoch"] = epoch_;
  body["config"] = digest_;
  body["connected"] = connected();
  body["lease_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(config_.lease).count();
  json::array replicas;
  {
    const std::lock_guard lock(admin_mu_);
    for (const fleet::ReplicaInfo& r : admin_replicas_) {
      json::object item;
      item["replica"] = r.replica;
      item["epoch"] = r.epoch;
      item["seq"] = r.seq;
      item["since_heard_ms"] =
          std::chrono::duration_cast<std::chrono::milliseconds>(r.since_heard).count();
      item["messages"] = r.messages;
      item["gaps"] = r.gaps;
      item["config_mismatch"] = r.config_mismatch;
      item["outstanding_tokens"] = r.tokens;
      item["running"] = r.running;
      replicas.push_back(std::move(item));
    }
  }
  body["replicas"] = std::move(replicas);
  return json::serialize(body);
}

}  // namespace omni::proxy
