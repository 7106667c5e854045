// The consumer side of vLLM's KV events over ZeroMQ (spec §2.5, §2.6, §2.8).
//
//   PUB ──[topic, seq, payload]──► SUB ─┐
//                                       ├─ subscriber thread: decode, order, detect gaps
//   ROUTER ◄──["", start_seq]── DEALER ─┘        │
//                                                ▼ bounded queue of ReceivedBatch ──► next()
//
// A gap (seq > expected) triggers one replay request for the missing range when a replay
// endpoint is configured; replies are read until the −1 terminator or the replay timeout. A
// sequence that goes back (publisher restart) is reported as a restart. Malformed messages
// (wrong frame count, bad sequence frame, undecodable payload) are counted and dropped; the
// subscriber never trusts its input. When the consumer falls behind, the oldest batches are
// dropped and counted. With ZmqSubscriberConfig::on_batch set, batches are pushed to the consumer
// from the subscriber thread instead (push mode).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {

struct ReceivedBatch;

struct ZmqSubscriberConfig {
  std::string endpoint;                        // the publisher's PUB endpoint (connected)
  std::optional<std::string> replay_endpoint;  // its ROUTER endpoint; no replay when absent
  std::string topic;                           // subscription prefix ("" = everything)
  std::size_t max_queue = 10000;               // batches waiting for next()
  Duration replay_timeout = std::chrono::seconds(2);
  DecodeLimits limits;
  // Push mode: every batch is handed to on_batch on the subscriber thread, in order, instead of
  // queueing for next() (one thread per feed, no polling consumer). on_lost then hears of every
  // batch lost (malformed, missing after a gap); it may be called with 0 never. Both must not
  // block for long: they delay the subscriber.
  std::function<void(ReceivedBatch&&)> on_batch;
  std::function<void(std::uint64_t lost)> on_lost;
};

struct ReceivedBatch {
  std::uint64_t seq = 0;
  KVEventBatch batch;
  bool replayed = false;  // recovered through the replay socket
  bool restart = false;   // the sequence went back: the publisher restarted, reset its state
};

struct ZmqSubscriberStats {
  std::uint64_t received = 0;   // batches delivered to the queue
  std::uint64_t malformed = 0;  // messages dropped as malformed
  std::uint64_t gaps = 0;       // gaps detected
  std::uint64_t missing = 0;    // batches lost for good (not recovered by replay)
  std::uint64_t replayed = 0;   // batches recovered by replay
  std::uint64_t restarts = 0;
  std::uint64_t overflowed = 0;  // dropped because the queue was full
};

class ZmqEventSubscriber {
 public:
  // Connects the sockets and starts the subscriber thread. Errors: kIo.
  static Result<std::unique_ptr<ZmqEventSubscriber>> start(ZmqSubscriberConfig config);
  ~ZmqEventSubscriber();
  ZmqEventSubscriber(const ZmqEventSubscriber&) = delete;
  ZmqEventSubscriber& operator=(const ZmqEventSubscriber&) = delete;

  // The next batch in sequence order, waiting at most `timeout`; nullopt on timeout or after
  // stop(). Thread-safe.
  std::optional<ReceivedBatch> next(Duration timeout);
  void stop();
  ZmqSubscriberStats stats() const;

 private:
  struct Impl;
  explicit ZmqEventSubscriber(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::kvcache
