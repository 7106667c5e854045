// The fleet sync's transport (docs/fleet.md): omni-proxy replicas of one fleet share the load
// they dispatch over NATS core subjects, so every replica places on the fleet-wide load.
//
//   Scheduler (master) ──LoadObserver::on_load_change──▶ a delta on <fleet>.load ──NATS──┐
//                      ──LoadObserver::on_predicted_blocks──▶ a prefix message ───────────┤
//   ticker thread, every snapshot_period ──post──▶ master: own snapshot published, silent  │
//                                                  replicas expired                        │
//   NATS subscription thread ◀────────────────────────────────────────────────────────────┘
//     decode (fleet_message.hpp; malformed: counted, dropped) ──post──▶ master: FleetView
//     applies it, and the Scheduler is told each engine's fleet load (report_fleet_load) or
//     the blocks another replica placed (apply_predicted_blocks)
//
// NATS unreachable: the replica routes on its own counts (and the engines' reported load),
// reconnects forever in the background, says so in omni_proxy_fleet_connected and /ready's
// body, and reconverges from the others' snapshots once it is back. Every queue is bounded:
// the subscription's pending limits (slow consumer: dropped, counted), the dispatcher's command
// queue (full: dropped, counted), the connection's reconnect buffer.
//
// Threading: created before the Dispatcher (the Scheduler holds it as its LoadObserver),
// started after it, stopped before it. on_load_change and everything posted run in the master
// context; the NATS callbacks on the library's threads; admin readers take a lock.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dispatcher.hpp"
#include "omni/fleet/fleet_view.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/proxy/config.hpp"
#include "omni/proxy/scheduler.hpp"

namespace omni::proxy {

struct FleetMetrics {
  metrics::CounterFamily* messages = nullptr;  // {direction, kind}
  metrics::CounterFamily* dropped = nullptr;   // {reason}
};

class FleetSync final : public LoadObserver {
 public:
  // `config_digest`: what must agree across replicas (fleet_config_digest); `listen_port`: for
  // the default replica id.
  FleetSync(FleetConfig config, std::string config_digest, std::uint16_t listen_port,
            const Clock& clock, FleetMetrics metrics);
  ~FleetSync() override;
  FleetSync(const FleetSync&) = delete;
  FleetSync& operator=(const FleetSync&) = delete;

  // Connects (retrying in the background when the server is not up yet), subscribes, starts
  // the ticker. An error only for what cannot work at all (a malformed URL, no memory).
  Status start(Dispatcher& dispatcher);
  // Says goodbye (the others forget this replica's load at once), stops the ticker, closes.
  void stop();

  void on_load_change(const NodeSpec& node, std::int64_t tokens, std::int64_t prompt_tokens,
                      std::int32_t running) override;
  void on_predicted_blocks(const NodeSpec& node, std::span<const std::uint64_t> hashes) override;

  bool connected() const noexcept { return connected_.load(std::memory_order_relaxed); }
  std::size_t live_replicas() const noexcept { return live_.load(std::memory_order_relaxed); }
  const std::string& replica() const noexcept { return self_; }
  // /admin/replicas: this replica, the connection, and every other replica heard from.
  std::string admin_json() const;

  // NATS callbacks (C linkage trampolines call these).
  void on_raw_message(const char* data, int size);
  void on_connection(bool up);
  void on_async_error(std::string_view what);

 private:
  struct Nats;
  void publish(fleet::FleetMessage message);
  void publish(fleet::MessageKind kind, std::vector<fleet::NodeLoadEntry> loads);
  void count_dropped(std::string_view reason);
  void count_message(std::string_view direction, fleet::MessageKind kind);
  // Master context.
  void apply(Scheduler& scheduler, const fleet::FleetMessage& message);
  void tick(Scheduler& scheduler);
  void push_totals(Scheduler& scheduler, const std::vector<std::string>* only);
  void ticker_loop();

  FleetConfig config_;
  std::string digest_;
  std::string self_;
  std::string epoch_;
  std::string subject_;
  const Clock& clock_;
  FleetMetrics metrics_;
  Dispatcher* dispatcher_ = nullptr;
  std::unique_ptr<Nats> nats_;
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<bool> connected_{false};
  std::atomic<std::size_t> live_{0};

  // Master context only.
  fleet::FleetView view_;
  std::unordered_map<std::string, FleetLoad> pushed_;  // what the Scheduler was last told

  mutable std::mutex admin_mu_;
  std::vector<fleet::ReplicaInfo> admin_replicas_;

  std::mutex ticker_mu_;
  std::condition_variable ticker_cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

// A digest of the settings replicas must share to mix their loads and prefixes: the policy,
// the PD mode, the block size, the hash algorithm and the effective root of the block-hash
// chain (`hash_root`, hex: from hash_seed, $PYTHONHASHSEED, or random — two replicas with
// random roots never agree). Stable across machines and builds.
std::string fleet_config_digest(const ProxyConfig& config, std::string_view hash_root);

}  // namespace omni::proxy
