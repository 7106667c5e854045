// The subscriber thread: reads the PUB stream, restores order with replay requests on gaps,
// and hands decoded batches to the consumer through a bounded queue.
#include "omni/kvcache/zmq_subscriber.hpp"

#include <zmq.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "zmq_frames.hpp"

namespace omni::kvcache {
namespace {

using namespace std::chrono_literals;
constexpr auto kPollInterval = 20ms;   // how often the thread checks for stop()
constexpr std::size_t kMaxFrames = 8;  // more frames than this: malformed, the rest drained

std::span<const std::uint8_t> span_of(const zmq::message_t& m) {
  return {static_cast<const std::uint8_t*>(m.data()), m.size()};
}

// Every frame of one multipart message (at most kMaxFrames kept). Empty on no message.
std::vector<zmq::message_t> recv_multipart(zmq::socket_t& socket, zmq::recv_flags flags) {
  std::vector<zmq::message_t> frames;
  zmq::message_t frame;
  if (!socket.recv(frame, flags)) return frames;
  bool more = frame.more();
  frames.push_back(std::move(frame));
  while (more) {
    zmq::message_t next;
    if (!socket.recv(next, zmq::recv_flags::none)) break;
    more = next.more();
    if (frames.size() < kMaxFrames + 1) frames.push_back(std::move(next));
  }
  return frames;
}

}  // namespace

struct ZmqEventSubscriber::Impl {
  ZmqSubscriberConfig config;
  zmq::context_t context{1};
  zmq::socket_t sub{context, zmq::socket_type::sub};
  std::optional<zmq::socket_t> dealer;

  std::mutex mu;
  std::condition_variable ready;
  std::deque<ReceivedBatch> queue;  // bounded by config.max_queue
  std::atomic<bool> stopping{false};
  std::thread thread;
  std::optional<std::uint64_t> expected;  // subscriber thread only

  std::atomic<std::uint64_t> received{0}, malformed{0}, gaps{0}, missing{0}, replayed{0},
      restarts{0}, overflowed{0};

  Status open() {
    try {
      sub.set(zmq::sockopt::subscribe, config.topic);
      sub.set(zmq::sockopt::linger, 0);
      sub.connect(config.endpoint);
      if (config.replay_endpoint) {
        dealer.emplace(context, zmq::socket_type::dealer);
        dealer->set(zmq::sockopt::linger, 0);
        dealer->connect(*config.replay_endpoint);
      }
    } catch (const zmq::error_t& e) {
      return make_error(ErrorCode::kIo,
                        "kv events: cannot connect to " + config.endpoint + ": " + e.what());
    }
    return ok_status();
  }

  void deliver(ReceivedBatch batch) {
    received.fetch_add(1, std::memory_order_relaxed);
    if (config.on_batch) {
      config.on_batch(std::move(batch));
      return;
    }
    {
      std::lock_guard lock(mu);
      if (queue.size() >= config.max_queue) {
        queue.pop_front();
        overflowed.fetch_add(1, std::memory_order_relaxed);
      }
      queue.push_back(std::move(batch));
    }
    ready.notify_one();
  }

  // Counts batches lost for good and, in push mode, tells the consumer.
  void lose(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
    if (n == 0) return;
    counter.fetch_add(n, std::memory_order_relaxed);
    if (config.on_lost) config.on_lost(n);
  }

  std::optional<KVEventBatch> decode(std::span<const std::uint8_t> payload) {
    auto decoded = decode_batch(payload, config.limits);
    if (!decoded) {
      lose(malformed, 1);
      return std::nullopt;
    }
    return std::move(decoded->batch);
  }

  // Asks for [from, until) and delivers what comes back, in order. Returns how many came.
  std::uint64_t replay_range(std::uint64_t from, std::uint64_t until) {
    if (!dealer) return 0;
    std::uint64_t recovered = 0;
    try {
      const auto start = zmq_wire::encode_seq(from);
      dealer->send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
      dealer->send(zmq::const_buffer(start.data(), start.size()), zmq::send_flags::none);
      const auto deadline = std::chrono::steady_clock::now() + config.replay_timeout;
      std::uint64_t next = from;
      while (!stopping.load(std::memory_order_relaxed)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= 0ms) break;
        zmq::pollitem_t item{static_cast<void*>(*dealer), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, left) <= 0) continue;
        auto frames = recv_multipart(*dealer, zmq::recv_flags::dontwait);
        if (frames.size() != 3 || frames[0].size() != 0) {
          lose(malformed, 1);
          continue;
        }
        auto seq = zmq_wire::decode_seq(span_of(frames[1]));
        if (!seq) {
          lose(malformed, 1);
          continue;
        }
        if (*seq == zmq_wire::kReplayEnd) break;
        if (*seq < next || *seq >= until) continue;  // already seen, or arrives on SUB
        auto batch = decode(span_of(frames[2]));
        next = *seq + 1;
        if (!batch) continue;
        deliver({*seq, std::move(*batch), /*replayed=*/true, /*restart=*/false});
        ++recovered;
      }
    } catch (const zmq::error_t&) {
      lose(malformed, 1);
    }
    replayed.fetch_add(recovered, std::memory_order_relaxed);
    return recovered;
  }

  void handle(std::vector<zmq::message_t> frames) {
    if (frames.size() != 3) {
      lose(malformed, 1);
      return;
    }
    auto seq = zmq_wire::decode_seq(span_of(frames[1]));
    if (!seq) {
      lose(malformed, 1);
      return;
    }
    bool restart = false;
    if (expected && *seq < *expected) {
      restart = true;
      restarts.fetch_add(1, std::memory_order_relaxed);
    } else if (expected && *seq > *expected) {
      gaps.fetch_add(1, std::memory_order_relaxed);
      const std::uint64_t lost = *seq - *expected;
      const std::uint64_t recovered = replay_range(*expected, *seq);
      lose(missing, lost - std::min(lost, recovered));
    }
    expected = *seq + 1;
    auto batch = decode(span_of(frames[2]));
    if (!batch) return;
    deliver({*seq, std::move(*batch), /*replayed=*/false, restart});
  }

  void run() {
    while (!stopping.load(std::memory_order_relaxed)) {
      try {
        zmq::pollitem_t item{static_cast<void*>(sub), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, kPollInterval) <= 0) continue;
        handle(recv_multipart(sub, zmq::recv_flags::dontwait));
      } catch (const zmq::error_t&) {
        lose(malformed, 1);
      }
    }
  }
};

ZmqEventSubscriber::ZmqEventSubscriber(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<ZmqEventSubscriber>> ZmqEventSubscriber::start(ZmqSubscriberConfig config) {
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  if (impl->config.max_queue == 0) impl->config.max_queue = 1;
  if (Status s = impl->open(); !s) return std::move(s).error();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<ZmqEventSubscriber>(new ZmqEventSubscriber(std::move(impl)));
}

ZmqEventSubscriber::~ZmqEventSubscriber() { stop(); }

std::optional<ReceivedBatch> ZmqEventSubscriber::next(Duration timeout) {
  std::unique_lock lock(impl_->mu);
  impl_->ready.wait_for(lock, timeout, [&] {
    return !impl_->queue.empty() || impl_->stopping.load(std::memory_order_relaxed);
  });
  if (impl_->queue.empty()) return std::nullopt;
  ReceivedBatch batch = std::move(impl_->queue.front());
  impl_->queue.pop_front();
  return batch;
}

void ZmqEventSubscriber::stop() {
  impl_->stopping.store(true, std::memory_order_relaxed);
  impl_->ready.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

ZmqSubscriberStats ZmqEventSubscriber::stats() const {
  ZmqSubscriberStats s;
  s.received = impl_->received.load(std::memory_order_relaxed);
  s.malformed = impl_->malformed.load(std::memory_order_relaxed);
  s.gaps = impl_->gaps.load(std::memory_order_relaxed);
  s.missing = impl_->missing.load(std::memory_order_relaxed);
  s.replayed = impl_->replayed.load(std::memory_order_relaxed);
  s.restarts = impl_->restarts.load(std::memory_order_relaxed);
  s.overflowed = impl_->overflowed.load(std::memory_order_relaxed);
  return s;
}

}  // namespace omni::kvcache
