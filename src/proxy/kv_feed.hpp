// Live feeds of the prefix index: each engine's KV events over ZeroMQ, handed to the master.
//
//   engine PUB ──▶ ZmqEventSubscriber (its own thread: decode, order, replay of a gap through
//   engine ROUTER ◀┘  the engine's replay socket, count malformed)
//                     │ on_batch, on that thread (push mode: no second thread, no polling)
//                     └──Dispatcher::post(fn, batch moved)──▶ master context:
//                                                    Scheduler::apply_kv_events(node, batch)
//
// Batches the subscriber lost (malformed, gaps not recovered, overflow) and batches the
// hand-over queue refused are counted against the node (omni_proxy_kv_events_dropped_total).
// A publisher restart clears the node's entries before its next batch is applied.
//
// Threading: follow() and stop() from the control thread (start-up, reload, shutdown).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatcher.hpp"
#include "omni/kvcache/zmq_subscriber.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/proxy/config.hpp"

namespace omni::proxy {

class KvEventFeeds {
 public:
  explicit KvEventFeeds(Dispatcher& dispatcher);
  ~KvEventFeeds();
  KvEventFeeds(const KvEventFeeds&) = delete;
  KvEventFeeds& operator=(const KvEventFeeds&) = delete;

  // Follows every node that names a KV-event endpoint; stops following nodes gone from the
  // list (or whose endpoint changed). kIo when a subscriber cannot be set up.
  Status follow(const std::vector<NodeEntry>& nodes);
  void stop();

 private:
  struct Feed;
  void hand_over(Feed& feed, kvcache::ReceivedBatch&& batch);
  void report_lost(Feed& feed);

  Dispatcher& dispatcher_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Feed>> feeds_;
};

// The Scheduler's prefix lookups, into a histogram (observer called in the master context).
class PrefixLookupMetrics final : public SchedulerObserver {
 public:
  void bind(metrics::Histogram* matched_tokens) noexcept { matched_tokens_ = matched_tokens; }
  void on_prefix_lookup(std::uint32_t matched_tokens) override {
    if (matched_tokens_) matched_tokens_->observe(static_cast<double>(matched_tokens));
  }

 private:
  metrics::Histogram* matched_tokens_ = nullptr;
};

// Registers the prefix-index and KV-event metrics (docs/proxy.md lists them).
Status export_prefix_metrics(metrics::Registry& registry, Dispatcher& dispatcher,
                             PrefixLookupMetrics& lookups);

}  // namespace omni::proxy
