// The ZeroMQ side of vLLM's KV-event publisher (ZmqEventPublisher, spec §2.5–§2.6).
//
//   engine thread ──publish(batch)──► bounded queue ──► publisher thread ──► PUB socket
//                                                           │  [topic, seq u64 BE, msgpack]
//                                                           └─ ROUTER replay socket (optional)
//                                                              ["", start_seq] → the buffered
//                                                              batches with seq >= start_seq,
//                                                              then ["", ff×8, ""]
//
// The publisher thread owns both sockets; the engine only enqueues (publish() never blocks and
// never touches a socket). The queue, the replay buffer and the PUB high-water mark are all
// bounded; a batch that does not fit in the queue is dropped and counted (its sequence number
// is still consumed, so subscribers see a gap and can ask for a replay of what is buffered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "omni/common/result.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {

struct ZmqPublisherConfig {
  // Bound when it contains '*' or "::" or starts with ipc:// or inproc://, else connected
  // (vLLM's rule). "tcp://127.0.0.1:*" binds an ephemeral port; see bound_endpoint().
  std::string endpoint = "tcp://*:5557";
  std::optional<std::string> replay_endpoint;  // ROUTER socket; no replay when absent
  std::size_t buffer_steps = 10000;            // batches kept for replay
  int hwm = 100000;                            // SNDHWM of the PUB socket
  std::size_t max_queue_size = 100000;         // batches waiting for the publisher thread
  std::string topic;                           // frame 1 of every message
  EventLayout layout = EventLayout::kArray;
};

struct ZmqPublisherStats {
  std::uint64_t published = 0;        // batches sent on the PUB socket
  std::uint64_t dropped = 0;          // batches refused because the queue was full
  std::uint64_t send_failures = 0;    // PUB sends that failed (HWM reached, ...)
  std::uint64_t replay_requests = 0;  // well-formed replay requests answered
  std::uint64_t bad_replay_requests = 0;
};

// vLLM's bind-or-connect rule for an endpoint.
bool endpoint_is_bound(const std::string& endpoint);

class ZmqEventPublisher {
 public:
  // Creates the sockets, binds/connects them and starts the publisher thread. Errors: kIo
  // (bad endpoint, address in use).
  static Result<std::unique_ptr<ZmqEventPublisher>> start(ZmqPublisherConfig config);
  ~ZmqEventPublisher();  // stop()
  ZmqEventPublisher(const ZmqEventPublisher&) = delete;
  ZmqEventPublisher& operator=(const ZmqEventPublisher&) = delete;

  // Queues one batch; returns false (and counts a drop) when the queue is full or stopped.
  // Thread-safe, never blocks on the network.
  bool publish(KVEventBatch batch);
  // Sends what is queued (bounded by `linger_ms`), then closes the sockets. Idempotent.
  void stop();

  // The PUB endpoint as bound (the real port when the config asked for '*').
  const std::string& bound_endpoint() const noexcept;
  const std::string& bound_replay_endpoint() const noexcept;
  ZmqPublisherStats stats() const;

 private:
  struct Impl;
  explicit ZmqEventPublisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::kvcache
