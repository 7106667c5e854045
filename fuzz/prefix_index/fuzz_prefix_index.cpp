// libFuzzer target: arbitrary bytes as KV-event payloads of three instances, applied to one
// prefix index, with lookups in between. The index must never crash, and its answers must stay
// self-consistent whatever it was fed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "omni/sched/event_feed.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  omni::sched::PrefixIndexOptions options;
  options.max_entries = 1024;
  omni::sched::PrefixIndex index(options);
  omni::sched::EventFeedStats stats;
  const std::span<const std::uint8_t> bytes(data, size);
  // The same payload as three instances' streams, and its halves as malformed ones.
  for (omni::sched::InstanceId instance = 0; instance < 3; ++instance) {
    omni::sched::feed_payload(index, instance, bytes, 1.0, stats);
    omni::sched::feed_payload(index, instance + 3, bytes.first(size / 2), 1.0, stats);
  }
  std::vector<std::uint64_t> probe;
  for (std::size_t i = 0; i + 8 <= size && probe.size() < 64; i += 8) {
    std::uint64_t h = 0;
    for (std::size_t b = 0; b < 8; ++b) h = (h << 8) | data[i + b];
    probe.push_back(h);
  }
  const auto matches = index.match(probe, 1.0);
  for (const auto& m : matches) {
    if (m.blocks > probe.size()) std::abort();
    if (index.match_instance(m.instance, probe, 1.0) != m.blocks) std::abort();
  }
  if (index.stats().entries > options.max_entries) std::abort();
  return 0;
}
