#include "kv_feed.hpp"

#include <future>

#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

// A /metrics scrape waits this long for the master to copy the index's figures.
constexpr auto kReportWait = std::chrono::milliseconds(200);

}  // namespace

// One engine's feed. Push mode: the subscriber's own thread decodes each batch and hands it to
// the master (moved into the command, never copied); there is no second thread per engine and
// no polling consumer.
struct KvEventFeeds::Feed {
  std::string node;
  std::string endpoint;
  std::optional<std::string> replay;
  // Batches lost (by the subscriber, or refused by a full hand-over queue) not yet counted in
  // the master: reported with the next successful hand-over.
  std::atomic<std::uint64_t> unreported{0};
  std::unique_ptr<kvcache::ZmqEventSubscriber> subscriber;
};

KvEventFeeds::KvEventFeeds(Dispatcher& dispatcher) : dispatcher_(dispatcher) {}
KvEventFeeds::~KvEventFeeds() { stop(); }

void KvEventFeeds::hand_over(Feed& feed, kvcache::ReceivedBatch&& received) {
  auto batch = std::make_shared<kvcache::ReceivedBatch>(std::move(received));
  const bool posted = dispatcher_.post([node = feed.node, batch](Scheduler& s) {
    s.apply_kv_events(node, batch->batch, batch->restart);
  });
  if (!posted) feed.unreported.fetch_add(1, std::memory_order_relaxed);
  report_lost(feed);
}

void KvEventFeeds::report_lost(Feed& feed) {
  const std::uint64_t lost = feed.unreported.exchange(0, std::memory_order_relaxed);
  if (lost == 0) return;
  const bool counted = dispatcher_.post(
      [node = feed.node, lost](Scheduler& s) { s.count_kv_events_dropped(node, lost); });
  if (!counted) feed.unreported.fetch_add(lost, std::memory_order_relaxed);
}

Status KvEventFeeds::follow(const std::vector<NodeEntry>& nodes) {
  std::lock_guard lock(mu_);
  auto wanted = [&](const Feed& feed) {
    for (const NodeEntry& n : nodes) {
      if (n.spec.name == feed.node && n.kv_events_endpoint == feed.endpoint &&
          n.kv_events_replay_endpoint == feed.replay) {
        return true;
      }
    }
    return false;
  };
  for (auto& feed : feeds_) {
    if (wanted(*feed)) continue;
    feed->subscriber->stop();
    feed.reset();
  }
  std::erase(feeds_, nullptr);
  for (const NodeEntry& n : nodes) {
    if (!n.kv_events_endpoint) continue;
    const bool followed = std::any_of(feeds_.begin(), feeds_.end(), [&](const auto& feed) {
      return feed->node == n.spec.name && feed->endpoint == *n.kv_events_endpoint;
    });
    if (followed) continue;
    auto feed = std::make_unique<Feed>();
    feed->node = n.spec.name;
    feed->endpoint = *n.kv_events_endpoint;
    feed->replay = n.kv_events_replay_endpoint;
    Feed* f = feed.get();
    kvcache::ZmqSubscriberConfig config;
    config.endpoint = *n.kv_events_endpoint;
    config.replay_endpoint = n.kv_events_replay_endpoint;
    config.on_batch = [this, f](kvcache::ReceivedBatch&& batch) {
      hand_over(*f, std::move(batch));
    };
    config.on_lost = [f](std::uint64_t lost) {
      f->unreported.fetch_add(lost, std::memory_order_relaxed);
    };
    auto subscriber = kvcache::ZmqEventSubscriber::start(config);
    if (!subscriber) {
      return make_error(ErrorCode::kIo, "KV events of " + n.spec.name + " at " + config.endpoint +
                                            ": " + subscriber.error().message);
    }
    feed->subscriber = std::move(*subscriber);
    feeds_.push_back(std::move(feed));
    log::get("proxy")->info(
        "following the KV events of {} at {}{}", n.spec.name, config.endpoint,
        config.replay_endpoint ? " (replay " + *config.replay_endpoint + ")" : "");
  }
  return {};
}

void KvEventFeeds::stop() {
  std::lock_guard lock(mu_);
  for (auto& feed : feeds_) feed->subscriber->stop();
  feeds_.clear();
}

namespace {

// The index's figures, copied in the master context; the last good copy if it is busy.
class ReportCache {
 public:
  explicit ReportCache(Dispatcher& dispatcher) : dispatcher_(dispatcher) {}
  PrefixIndexReport get() {
    auto done = std::make_shared<std::promise<PrefixIndexReport>>();
    auto result = done->get_future();
    if (dispatcher_.post([done](Scheduler& s) { done->set_value(s.prefix_report()); }) &&
        result.wait_for(kReportWait) == std::future_status::ready) {
      try {
        PrefixIndexReport report = result.get();
        std::lock_guard lock(mu_);
        last_ = report;
      } catch (const std::future_error&) {
        // Stopping: the command was cancelled and never ran; keep the last copy.
      }
    }
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  Dispatcher& dispatcher_;
  std::mutex mu_;
  PrefixIndexReport last_;
};

using Field = double (*)(const PrefixIndexReport&);

Status index_gauge(metrics::Registry& r, std::shared_ptr<ReportCache> cache, std::string_view name,
                   std::string_view help, Field field, bool counter = false) {
  auto collect = [cache, field](metrics::Emitter& e) { e.emit({}, field(cache->get())); };
  return counter ? r.counter_callback(name, help, {}, collect)
                 : r.gauge_callback(name, help, {}, collect);
}

using NodeField = double (*)(const NodeStatus&);

Status node_family(metrics::Registry& r, Dispatcher& d, std::string_view name,
                   std::string_view help, NodeField field, bool counter) {
  auto collect = [&d, field](metrics::Emitter& e) {
    for (const NodeStatus& n : d.snapshot().nodes) {
      if (n.spec.kv_events) e.emit({role_name(n.spec.role), n.spec.name}, field(n));
    }
  };
  return counter ? r.counter_callback(name, help, {"pool", "node"}, collect)
                 : r.gauge_callback(name, help, {"pool", "node"}, collect);
}

}  // namespace

Status export_prefix_metrics(metrics::Registry& r, Dispatcher& d, PrefixLookupMetrics& lookups) {
  auto buckets = metrics::exponential_buckets(16, 2, 14);  // 16 .. 131072 tokens
  buckets.insert(buckets.begin(), 0);
  auto matched = r.histogram(
      "omni_proxy_prefix_matched_tokens",
      "Cached prompt tokens on the chosen node, per placement that looked the prompt up.", {},
      buckets);
  if (!matched) return std::move(matched).error();
  auto child = (*matched)->with({});
  if (!child) return std::move(child).error();
  lookups.bind(*child);
  auto cache = std::make_shared<ReportCache>(d);
  Status s = index_gauge(r, cache, "omni_proxy_prefix_index_entries",
                         "(block, node) pairs in the prefix index.",
                         [](const PrefixIndexReport& p) { return double(p.stats.entries); });
  if (s)
    s = index_gauge(r, cache, "omni_proxy_prefix_index_blocks",
                    "Distinct block hashes in the prefix index.",
                    [](const PrefixIndexReport& p) { return double(p.stats.blocks); });
  if (s)
    s = index_gauge(r, cache, "omni_proxy_prefix_index_memory_bytes",
                    "Estimated memory of the prefix index.",
                    [](const PrefixIndexReport& p) { return double(p.stats.memory_bytes); });
  if (s)
    s = index_gauge(
        r, cache, "omni_proxy_prefix_index_evicted_total",
        "Entries dropped to stay under max_entries.",
        [](const PrefixIndexReport& p) { return double(p.stats.evicted); }, true);
  if (s)
    s = index_gauge(
        r, cache, "omni_proxy_prefix_lookups_total",
        "Placements that looked their prompt up in the prefix index.",
        [](const PrefixIndexReport& p) { return double(p.lookups); }, true);
  if (s)
    s = index_gauge(r, cache, "omni_proxy_kv_events_stale_nodes",
                    "Nodes whose KV-event stream is silent although they were sent uncached work.",
                    [](const PrefixIndexReport& p) { return double(p.stale_nodes); });
  if (s)
    s = node_family(
        r, d, "omni_proxy_kv_events_applied_total", "KV-event batches applied to the prefix index.",
        [](const NodeStatus& n) { return double(n.kv_events_applied); }, true);
  if (s)
    s = node_family(
        r, d, "omni_proxy_kv_events_dropped_total",
        "KV-event batches lost: malformed, missing after a gap, or no room to hand over.",
        [](const NodeStatus& n) { return double(n.kv_events_dropped); }, true);
  if (s)
    s = node_family(
        r, d, "omni_proxy_node_kv_events_stale", "1 while a node's KV-event stream is stale.",
        [](const NodeStatus& n) { return n.kv_stale ? 1.0 : 0.0; }, false);
  return s;
}

}  // namespace omni::proxy
