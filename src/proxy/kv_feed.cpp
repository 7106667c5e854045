#include "kv_feed.hpp"

#include <future>

#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);
// A /metrics scrape waits this long for the master to copy the index's figures.
constexpr auto kReportWait = std::chrono::milliseconds(200);

std::uint64_t lost(const kvcache::ZmqSubscriberStats& s) {
  return s.malformed + s.missing + s.overflowed;
}

}  // namespace

struct KvEventFeeds::Feed {
  std::string node;
  std::string endpoint;
  std::unique_ptr<kvcache::ZmqEventSubscriber> subscriber;
  std::atomic<bool> stopping{false};
  std::thread thread;
};

KvEventFeeds::KvEventFeeds(Dispatcher& dispatcher) : dispatcher_(dispatcher) {}
KvEventFeeds::~KvEventFeeds() { stop(); }

Status KvEventFeeds::follow(const std::vector<NodeEntry>& nodes) {
  std::lock_guard lock(mu_);
  auto wanted = [&](const Feed& feed) {
    for (const NodeEntry& n : nodes) {
      if (n.spec.name == feed.node && n.kv_events_endpoint == feed.endpoint) return true;
    }
    return false;
  };
  for (auto& feed : feeds_) {
    if (wanted(*feed)) continue;
    feed->stopping = true;
    feed->subscriber->stop();
    if (feed->thread.joinable()) feed->thread.join();
    feed.reset();
  }
  std::erase(feeds_, nullptr);
  for (const NodeEntry& n : nodes) {
    if (!n.kv_events_endpoint) continue;
    const bool followed = std::any_of(feeds_.begin(), feeds_.end(), [&](const auto& feed) {
      return feed->node == n.spec.name && feed->endpoint == *n.kv_events_endpoint;
    });
    if (followed) continue;
    kvcache::ZmqSubscriberConfig config;
    config.endpoint = *n.kv_events_endpoint;
    auto subscriber = kvcache::ZmqEventSubscriber::start(config);
    if (!subscriber) {
      return make_error(ErrorCode::kIo, "KV events of " + n.spec.name + " at " + config.endpoint +
                                            ": " + subscriber.error().message);
    }
    auto feed = std::make_unique<Feed>();
    feed->node = n.spec.name;
    feed->endpoint = config.endpoint;
    feed->subscriber = std::move(*subscriber);
    Feed& f = *feed;
    feed->thread = std::thread([this, &f] { pump(f); });
    feeds_.push_back(std::move(feed));
    log::get("proxy")->info("following the KV events of {} at {}", n.spec.name, config.endpoint);
  }
  return {};
}

void KvEventFeeds::pump(Feed& feed) {
  std::uint64_t lost_seen = 0;
  std::uint64_t refused = 0;  // batches the hand-over queue had no room for, not yet reported
  while (!feed.stopping.load()) {
    auto received = feed.subscriber->next(kPoll);
    const std::uint64_t lost_now = lost(feed.subscriber->stats());
    std::uint64_t dropped = refused + (lost_now - lost_seen);
    if (received) {
      auto batch = std::make_shared<kvcache::ReceivedBatch>(std::move(*received));
      const bool posted = dispatcher_.post([node = feed.node, batch](Scheduler& s) {
        s.apply_kv_events(node, batch->batch, batch->restart);
      });
      if (!posted) dropped += 1;
    }
    refused = 0;
    if (dropped == 0) {
      lost_seen = lost_now;
      continue;
    }
    const bool counted = dispatcher_.post(
        [node = feed.node, dropped](Scheduler& s) { s.count_kv_events_dropped(node, dropped); });
    if (counted) {
      lost_seen = lost_now;
    } else {
      refused = dropped - (lost_now - lost_seen);  // try again on the next round
    }
  }
}

void KvEventFeeds::stop() {
  std::lock_guard lock(mu_);
  for (auto& feed : feeds_) feed->stopping = true;
  for (auto& feed : feeds_) {
    feed->subscriber->stop();
    if (feed->thread.joinable()) feed->thread.join();
  }
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
      "omni_proxy:prefix_matched_tokens",
      "Cached prompt tokens on the chosen node, per placement that looked the prompt up.", {},
      buckets);
  if (!matched) return std::move(matched).error();
  auto child = (*matched)->with({});
  if (!child) return std::move(child).error();
  lookups.bind(*child);
  auto cache = std::make_shared<ReportCache>(d);
  Status s = index_gauge(r, cache, "omni_proxy:prefix_index_entries",
                         "(block, node) pairs in the prefix index.",
                         [](const PrefixIndexReport& p) { return double(p.stats.entries); });
  if (s)
    s = index_gauge(r, cache, "omni_proxy:prefix_index_blocks",
                    "Distinct block hashes in the prefix index.",
                    [](const PrefixIndexReport& p) { return double(p.stats.blocks); });
  if (s)
    s = index_gauge(r, cache, "omni_proxy:prefix_index_memory_bytes",
                    "Estimated memory of the prefix index.",
                    [](const PrefixIndexReport& p) { return double(p.stats.memory_bytes); });
  if (s)
    s = index_gauge(
        r, cache, "omni_proxy:prefix_index_evicted_total",
        "Entries dropped to stay under max_entries.",
        [](const PrefixIndexReport& p) { return double(p.stats.evicted); }, true);
  if (s)
    s = index_gauge(
        r, cache, "omni_proxy:prefix_lookups_total",
        "Placements that looked their prompt up in the prefix index.",
        [](const PrefixIndexReport& p) { return double(p.lookups); }, true);
  if (s)
    s = index_gauge(r, cache, "omni_proxy:kv_events_stale_nodes",
                    "Nodes whose KV-event stream is silent although they were sent uncached work.",
                    [](const PrefixIndexReport& p) { return double(p.stale_nodes); });
  if (s)
    s = node_family(
        r, d, "omni_proxy:kv_events_applied_total", "KV-event batches applied to the prefix index.",
        [](const NodeStatus& n) { return double(n.kv_events_applied); }, true);
  if (s)
    s = node_family(
        r, d, "omni_proxy:kv_events_dropped_total",
        "KV-event batches lost: malformed, missing after a gap, or no room to hand over.",
        [](const NodeStatus& n) { return double(n.kv_events_dropped); }, true);
  if (s)
    s = node_family(
        r, d, "omni_proxy:node_kv_events_stale", "1 while a node's KV-event stream is stale.",
        [](const NodeStatus& n) { return n.kv_stale ? 1.0 : 0.0; }, false);
  return s;
}

}  // namespace omni::proxy
