// omni_sim_kv_listener: a KV-event subscriber for integration tests, on the omni_kvcache_zmq
// library. Prints one line per batch ("seq=N stored=S removed=R cleared=C blocks=B") and exits
// after --batches batches (status 0) or --timeout seconds (status 1).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "omni/kvcache/zmq_subscriber.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: omni_sim_kv_listener ENDPOINT BATCHES TIMEOUT_S [TOPIC]\n";
    return 2;
  }
  omni::kvcache::ZmqSubscriberConfig config;
  config.endpoint = argv[1];
  const long want = std::strtol(argv[2], nullptr, 10);
  const auto timeout = std::chrono::seconds(std::strtol(argv[3], nullptr, 10));
  if (argc > 4) config.topic = argv[4];
  auto sub = omni::kvcache::ZmqEventSubscriber::start(config);
  if (!sub) {
    std::cerr << sub.error().message << "\n";
    return 2;
  }
  std::cout << "subscribed " << config.endpoint << std::endl;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  long got = 0;
  while (got < want && std::chrono::steady_clock::now() < deadline) {
    auto batch = (*sub)->next(std::chrono::milliseconds(100));
    if (!batch) continue;
    int stored = 0, removed = 0, cleared = 0;
    std::size_t blocks = 0;
    for (const auto& event : batch->batch.events) {
      if (const auto* s = std::get_if<omni::kvcache::BlockStored>(&event)) {
        ++stored;
        blocks += s->block_hashes.size();
      } else if (std::holds_alternative<omni::kvcache::BlockRemoved>(event)) {
        ++removed;
      } else {
        ++cleared;
      }
    }
    std::cout << "seq=" << batch->seq << " stored=" << stored << " removed=" << removed
              << " cleared=" << cleared << " blocks=" << blocks << std::endl;
    ++got;
  }
  std::cout << "malformed=" << (*sub)->stats().malformed << std::endl;
  return got >= want ? 0 : 1;
}
