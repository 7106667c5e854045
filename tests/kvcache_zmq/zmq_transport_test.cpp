// The ZeroMQ KV-event transport against itself and against hand-made sockets: the 3-frame
// wire format, ordering, replay on gaps, restarts, malformed messages.
#include <gtest/gtest.h>
#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "omni/kvcache/zmq_publisher.hpp"
#include "omni/kvcache/zmq_subscriber.hpp"

namespace omni::kvcache {
namespace {

using namespace std::chrono_literals;

KVEventBatch batch_with(std::uint64_t hash) {
  KVEventBatch batch;
  batch.ts = 1767225600.5;
  BlockRemoved removed;
  removed.block_hashes.push_back(EventHash{hash});
  removed.medium = "GPU";
  removed.group_idx = 0;
  batch.events.push_back(removed);
  batch.data_parallel_rank = 0;
  return batch;
}

std::uint64_t first_hash(const KVEventBatch& batch) {
  return std::get<std::uint64_t>(std::get<BlockRemoved>(batch.events.at(0)).block_hashes.at(0));
}

std::vector<std::uint8_t> seq_bytes(std::uint64_t seq) {
  std::vector<std::uint8_t> out(8);
  for (int i = 7; i >= 0; --i, seq >>= 8) out[static_cast<std::size_t>(i)] = seq & 0xffu;
  return out;
}

TEST(ZmqEndpoint, BindsOrConnectsAsVllm) {
  EXPECT_TRUE(endpoint_is_bound("tcp://*:5557"));
  EXPECT_TRUE(endpoint_is_bound("tcp://[::]:5557"));
  EXPECT_TRUE(endpoint_is_bound("ipc:///tmp/kv"));
  EXPECT_TRUE(endpoint_is_bound("inproc://kv"));
  EXPECT_FALSE(endpoint_is_bound("tcp://10.0.0.1:5557"));
}

TEST(ZmqTransport, SubscriberReceivesPublishedBatchesInOrder) {
  ZmqPublisherConfig pc;
  pc.endpoint = "tcp://127.0.0.1:*";
  pc.topic = "kv";
  auto pub = ZmqEventPublisher::start(pc);
  ASSERT_TRUE(pub) << pub.error().message;
  ZmqSubscriberConfig sc;
  sc.endpoint = (*pub)->bound_endpoint();
  sc.topic = "kv";
  auto sub = ZmqEventSubscriber::start(sc);
  ASSERT_TRUE(sub) << sub.error().message;

  // PUB drops everything until the subscription has arrived (slow joiner): probe until one
  // batch gets through, then everything after it must arrive in order.
  std::optional<ReceivedBatch> first;
  for (int i = 0; i < 200 && !first; ++i) {
    (*pub)->publish(batch_with(1000));
    first = (*sub)->next(20ms);
  }
  ASSERT_TRUE(first);
  EXPECT_EQ(first_hash(first->batch), 1000u);
  for (std::uint64_t h = 1; h <= 5; ++h) ASSERT_TRUE((*pub)->publish(batch_with(h)));
  std::uint64_t last_seq = first->seq;
  std::vector<std::uint64_t> got;
  while (got.size() < 5) {
    auto b = (*sub)->next(2s);
    ASSERT_TRUE(b) << "timed out after " << got.size() << " batches";
    EXPECT_EQ(b->seq, last_seq + 1);
    last_seq = b->seq;
    if (first_hash(b->batch) != 1000u) got.push_back(first_hash(b->batch));
  }
  EXPECT_EQ(got, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ((*sub)->stats().malformed, 0u);
  EXPECT_EQ((*sub)->stats().gaps, 0u);
}

TEST(ZmqTransport, PublisherAnswersReplayWithBufferedBatchesThenTerminator) {
  ZmqPublisherConfig pc;
  pc.endpoint = "tcp://127.0.0.1:*";
  pc.replay_endpoint = "tcp://127.0.0.1:*";
  pc.buffer_steps = 2;
  auto pub = ZmqEventPublisher::start(pc);
  ASSERT_TRUE(pub) << pub.error().message;
  for (std::uint64_t h = 0; h < 3; ++h) (*pub)->publish(batch_with(h));  // seq 0, 1, 2

  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 2000);
  dealer.connect((*pub)->bound_replay_endpoint());
  // The publisher thread sends asynchronously: ask until all three are buffered (seq 2 seen).
  std::vector<std::uint64_t> seqs;
  for (int attempt = 0; attempt < 100; ++attempt) {
    seqs.clear();
    auto start = seq_bytes(0);
    dealer.send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
    dealer.send(zmq::buffer(start), zmq::send_flags::none);
    for (;;) {
      std::vector<zmq::message_t> frames(3);
      ASSERT_TRUE(dealer.recv(frames[0]));
      ASSERT_TRUE(frames[0].more());
      ASSERT_TRUE(dealer.recv(frames[1]));
      ASSERT_TRUE(dealer.recv(frames[2]));
      EXPECT_EQ(frames[0].size(), 0u);
      ASSERT_EQ(frames[1].size(), 8u);
      const auto* p = static_cast<const std::uint8_t*>(frames[1].data());
      std::uint64_t seq = 0;
      for (int i = 0; i < 8; ++i) seq = (seq << 8) | p[i];
      if (seq == ~std::uint64_t{0}) {
        EXPECT_EQ(frames[2].size(), 0u);
        break;
      }
      auto decoded =
          decode_batch({static_cast<const std::uint8_t*>(frames[2].data()), frames[2].size()});
      ASSERT_TRUE(decoded);
      EXPECT_EQ(first_hash(decoded->batch.events.empty() ? batch_with(99) : decoded->batch), seq);
      seqs.push_back(seq);
    }
    if (!seqs.empty() && seqs.back() == 2) break;
    std::this_thread::sleep_for(10ms);
  }
  // buffer_steps = 2: only the last two batches are kept.
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ((*pub)->stats().replay_requests >= 1, true);
}

// A hand-made publisher (XPUB, so the test can wait for the subscription) and replay ROUTER.
class RawPublisher {
 public:
  RawPublisher() {
    pub_.bind("tcp://127.0.0.1:*");
    router_.bind("tcp://127.0.0.1:*");
    router_.set(zmq::sockopt::rcvtimeo, 5000);
  }
  std::string endpoint() { return pub_.get(zmq::sockopt::last_endpoint); }
  std::string replay_endpoint() { return router_.get(zmq::sockopt::last_endpoint); }
  void wait_for_subscriber() {
    zmq::message_t subscription;
    pub_.set(zmq::sockopt::rcvtimeo, 5000);
    ASSERT_TRUE(pub_.recv(subscription));
  }
  void send(std::vector<std::vector<std::uint8_t>> frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      pub_.send(zmq::buffer(frames[i]),
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
  void send_batch(std::uint64_t seq, std::uint64_t hash) {
    send({{}, seq_bytes(seq), encode_batch(batch_with(hash))});
  }
  // Serves one replay request with the batches `seqs` (hash = seq), then the terminator.
  void serve_replay(std::vector<std::uint64_t> seqs) {
    zmq::message_t id, empty, start;
    ASSERT_TRUE(router_.recv(id));
    ASSERT_TRUE(router_.recv(empty));
    ASSERT_TRUE(router_.recv(start));
    auto reply = [&](std::vector<std::uint8_t> seq, std::vector<std::uint8_t> payload) {
      router_.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
      router_.send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
      router_.send(zmq::buffer(seq), zmq::send_flags::sndmore);
      router_.send(zmq::buffer(payload), zmq::send_flags::none);
    };
    for (std::uint64_t s : seqs) reply(seq_bytes(s), encode_batch(batch_with(s)));
    reply(seq_bytes(~std::uint64_t{0}), {});
  }

 private:
  zmq::context_t ctx_;
  zmq::socket_t pub_{ctx_, zmq::socket_type::xpub};
  zmq::socket_t router_{ctx_, zmq::socket_type::router};
};

TEST(ZmqTransport, GapIsFilledByReplayInOrder) {
  RawPublisher raw;
  ZmqSubscriberConfig sc;
  sc.endpoint = raw.endpoint();
  sc.replay_endpoint = raw.replay_endpoint();
  auto sub = ZmqEventSubscriber::start(sc);
  ASSERT_TRUE(sub);
  raw.wait_for_subscriber();
  raw.send_batch(0, 0);
  raw.send_batch(3, 3);  // seq 1 and 2 lost
  raw.serve_replay({1, 2});
  std::vector<std::uint64_t> seqs;
  std::vector<bool> replayed;
  for (int i = 0; i < 4; ++i) {
    auto b = (*sub)->next(5s);
    ASSERT_TRUE(b);
    EXPECT_EQ(first_hash(b->batch), b->seq);
    seqs.push_back(b->seq);
    replayed.push_back(b->replayed);
  }
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(replayed, (std::vector<bool>{false, true, true, false}));
  auto stats = (*sub)->stats();
  EXPECT_EQ(stats.gaps, 1u);
  EXPECT_EQ(stats.replayed, 2u);
  EXPECT_EQ(stats.missing, 0u);
}

TEST(ZmqTransport, MalformedMessagesAreCountedAndDroppedAndRestartIsFlagged) {
  RawPublisher raw;
  ZmqSubscriberConfig sc;
  sc.endpoint = raw.endpoint();
  auto sub = ZmqEventSubscriber::start(sc);
  ASSERT_TRUE(sub);
  raw.wait_for_subscriber();
  raw.send({{}, seq_bytes(0)});                      // two frames
  raw.send({{}, {1, 2, 3}, {0x90}});                 // short sequence frame
  raw.send({{}, seq_bytes(0), {0xc1, 0xff, 0x00}});  // undecodable payload
  raw.send_batch(5, 5);
  raw.send_batch(0, 0);  // back to 0: the publisher restarted
  auto a = (*sub)->next(5s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seq, 5u);
  auto b = (*sub)->next(5s);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->seq, 0u);
  EXPECT_TRUE(b->restart);
  EXPECT_EQ((*sub)->stats().malformed, 3u);
  EXPECT_EQ((*sub)->stats().restarts, 1u);
  EXPECT_FALSE((*sub)->next(10ms));
}

// Push mode (what omni-proxy's feeds use): batches arrive on the subscriber's own thread, in
// order, replayed ones included; losses are reported as they happen; next() stays empty.
TEST(ZmqTransport, PushModeHandsBatchesAndLossesToTheConsumerOnItsThread) {
  RawPublisher raw;
  std::mutex mu;
  std::vector<std::uint64_t> seqs;
  std::vector<std::thread::id> threads;
  std::atomic<std::uint64_t> lost{0};
  ZmqSubscriberConfig sc;
  sc.endpoint = raw.endpoint();
  sc.replay_endpoint = raw.replay_endpoint();
  sc.on_batch = [&](ReceivedBatch&& b) {
    const std::lock_guard lock(mu);
    seqs.push_back(b.seq);
    threads.push_back(std::this_thread::get_id());
  };
  sc.on_lost = [&](std::uint64_t n) { lost += n; };
  auto sub = ZmqEventSubscriber::start(sc);
  ASSERT_TRUE(sub);
  raw.wait_for_subscriber();
  raw.send_batch(0, 0);
  raw.send_batch(3, 3);  // 1 and 2 lost; the replay socket recovers 1 only
  raw.serve_replay({1});
  raw.send({{}, seq_bytes(4), {0xc1}});  // malformed
  raw.send_batch(5, 5);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  for (;;) {
    {
      const std::lock_guard lock(mu);
      if (seqs.size() >= 4) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "batches did not arrive";
    std::this_thread::sleep_for(5ms);
  }
  const std::lock_guard lock(mu);
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{0, 1, 3, 5}));
  for (const auto& t : threads) EXPECT_EQ(t, threads.front());
  EXPECT_NE(threads.front(), std::this_thread::get_id());
  EXPECT_EQ(lost.load(), 2u);  // seq 2 missing, seq 4 malformed
  EXPECT_FALSE((*sub)->next(10ms));
}

TEST(ZmqTransport, PublisherReportsBadEndpoint) {
  ZmqPublisherConfig pc;
  pc.endpoint = "tcp://*:notaport";
  auto pub = ZmqEventPublisher::start(pc);
  ASSERT_FALSE(pub);
  EXPECT_EQ(pub.error().code, ErrorCode::kIo);
}

}  // namespace
}  // namespace omni::kvcache
