// The publisher thread: drains the queue onto the PUB socket and answers replay requests
// between publishes, as vLLM's ZmqEventPublisher does.
#include "omni/kvcache/zmq_publisher.hpp"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "zmq_frames.hpp"

namespace omni::kvcache {

bool endpoint_is_bound(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://");
}

namespace {

using namespace std::chrono_literals;
constexpr auto kPollInterval = 10ms;  // how often the thread looks at the replay socket

struct QueuedBatch {
  std::uint64_t seq;
  KVEventBatch batch;
};

struct StoredBatch {
  std::uint64_t seq;
  std::vector<std::uint8_t> payload;
};

zmq::const_buffer bytes_of(std::span<const std::uint8_t> data) {
  return zmq::const_buffer(data.data(), data.size());
}

}  // namespace

struct ZmqEventPublisher::Impl {
  ZmqPublisherConfig config;
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
  std::optional<zmq::socket_t> replay;
  std::string bound_endpoint;
  std::string bound_replay_endpoint;

  std::mutex mu;
  std::condition_variable wake;
  std::deque<QueuedBatch> queue;  // bounded by config.max_queue_size
  std::uint64_t next_seq = 0;
  bool stopping = false;
  std::thread thread;

  std::deque<StoredBatch> buffer;  // publisher thread only; bounded by buffer_steps
  std::atomic<std::uint64_t> published{0}, dropped{0}, send_failures{0}, replay_requests{0},
      bad_replay_requests{0};

  Status open() {
    try {
      pub.set(zmq::sockopt::sndhwm, config.hwm);
      pub.set(zmq::sockopt::linger, 500);
      if (endpoint_is_bound(config.endpoint)) {
        pub.bind(config.endpoint);
        bound_endpoint = pub.get(zmq::sockopt::last_endpoint);
      } else {
        pub.connect(config.endpoint);
        bound_endpoint = config.endpoint;
      }
      if (config.replay_endpoint) {
        replay.emplace(context, zmq::socket_type::router);
        replay->set(zmq::sockopt::linger, 0);
        replay->bind(*config.replay_endpoint);
        bound_replay_endpoint = replay->get(zmq::sockopt::last_endpoint);
      }
    } catch (const zmq::error_t& e) {
      return make_error(ErrorCode::kIo,
                        "kv events: cannot open " + config.endpoint + ": " + e.what());
    }
    return ok_status();
  }

  void send(const QueuedBatch& item) {
    std::vector<std::uint8_t> payload = encode_batch(item.batch, config.layout);
    const auto seq = zmq_wire::encode_seq(item.seq);
    const std::span<const std::uint8_t> topic(
        reinterpret_cast<const std::uint8_t*>(config.topic.data()), config.topic.size());
    try {
      bool ok = pub.send(bytes_of(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait)
                    .has_value();
      ok =
          ok &&
          pub.send(bytes_of(seq), zmq::send_flags::sndmore | zmq::send_flags::dontwait).has_value();
      ok = ok && pub.send(bytes_of(payload), zmq::send_flags::dontwait).has_value();
      (ok ? published : send_failures).fetch_add(1, std::memory_order_relaxed);
    } catch (const zmq::error_t&) {
      send_failures.fetch_add(1, std::memory_order_relaxed);
    }
    if (config.buffer_steps == 0) return;
    if (buffer.size() >= config.buffer_steps) buffer.pop_front();
    buffer.push_back({item.seq, std::move(payload)});
  }

  // One replay request, if any is waiting: [identity, "", start_seq].
  void serve_one_replay() {
    std::vector<zmq::message_t> frames;
    try {
      zmq::message_t frame;
      if (!replay->recv(frame, zmq::recv_flags::dontwait)) return;
      frames.push_back(std::move(frame));
      while (frames.back().more() && frames.size() < 8) {
        zmq::message_t next;
        if (!replay->recv(next, zmq::recv_flags::none)) break;
        frames.push_back(std::move(next));
      }
    } catch (const zmq::error_t&) {
      return;
    }
    std::optional<std::uint64_t> start;
    if (frames.size() == 3 && frames[1].size() == 0) {
      start = zmq_wire::decode_seq(
          {static_cast<const std::uint8_t*>(frames[2].data()), frames[2].size()});
    }
    if (!start) {
      bad_replay_requests.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    replay_requests.fetch_add(1, std::memory_order_relaxed);
    reply_from(frames[0], *start);
  }

  void reply_from(const zmq::message_t& identity, std::uint64_t start) {
    auto send_reply = [&](std::span<const std::uint8_t> seq, std::span<const std::uint8_t> body) {
      zmq::message_t id(identity.data(), identity.size());
      replay->send(id, zmq::send_flags::sndmore);
      replay->send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
      replay->send(bytes_of(seq), zmq::send_flags::sndmore);
      replay->send(bytes_of(body), zmq::send_flags::none);
    };
    try {
      for (const StoredBatch& stored : buffer) {
        if (stored.seq < start) continue;
        const auto seq = zmq_wire::encode_seq(stored.seq);
        send_reply(seq, stored.payload);
      }
      const auto end = zmq_wire::encode_seq(zmq_wire::kReplayEnd);
      send_reply(end, {});
    } catch (const zmq::error_t&) {
      // The requester went away mid-reply (ROUTER drops to unknown peers); nothing to do.
    }
  }

  void serve_replays() {
    if (!replay) return;
    for (int i = 0; i < 16; ++i) {  // bounded work between publishes
      zmq::pollitem_t item{static_cast<void*>(*replay), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(0)) <= 0) return;
      serve_one_replay();
    }
  }

  void run() {
    std::deque<QueuedBatch> work;
    for (;;) {
      bool stop_now = false;
      {
        std::unique_lock lock(mu);
        wake.wait_for(lock, kPollInterval, [&] { return !queue.empty() || stopping; });
        work.swap(queue);
        stop_now = stopping && work.empty();
      }
      for (const QueuedBatch& item : work) send(item);
      work.clear();
      serve_replays();
      if (stop_now) return;
    }
  }
};

ZmqEventPublisher::ZmqEventPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<ZmqEventPublisher>> ZmqEventPublisher::start(ZmqPublisherConfig config) {
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  if (Status s = impl->open(); !s) return std::move(s).error();
  // The sockets move to the publisher thread; starting a thread is a full memory barrier,
  // which is what ZeroMQ asks of a socket changing threads.
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<ZmqEventPublisher>(new ZmqEventPublisher(std::move(impl)));
}

ZmqEventPublisher::~ZmqEventPublisher() { stop(); }

bool ZmqEventPublisher::publish(KVEventBatch batch) {
  {
    std::lock_guard lock(impl_->mu);
    const std::uint64_t seq = impl_->next_seq++;
    if (impl_->stopping || impl_->queue.size() >= impl_->config.max_queue_size) {
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    impl_->queue.push_back({seq, std::move(batch)});
  }
  impl_->wake.notify_one();
  return true;
}

void ZmqEventPublisher::stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_one();
  if (impl_->thread.joinable()) impl_->thread.join();
}

const std::string& ZmqEventPublisher::bound_endpoint() const noexcept {
  return impl_->bound_endpoint;
}
const std::string& ZmqEventPublisher::bound_replay_endpoint() const noexcept {
  return impl_->bound_replay_endpoint;
}

ZmqPublisherStats ZmqEventPublisher::stats() const {
  ZmqPublisherStats s;
  s.published = impl_->published.load(std::memory_order_relaxed);
  s.dropped = impl_->dropped.load(std::memory_order_relaxed);
  s.send_failures = impl_->send_failures.load(std::memory_order_relaxed);
  s.replay_requests = impl_->replay_requests.load(std::memory_order_relaxed);
  s.bad_replay_requests = impl_->bad_replay_requests.load(std::memory_order_relaxed);
  return s;
}

}  // namespace omni::kvcache
