#include "omni/sched/event_feed.hpp"

namespace omni::sched {

bool feed_payload(PrefixIndex& index, InstanceId instance, std::span<const std::uint8_t> payload,
                  double now, EventFeedStats& stats) {
  kvcache::DecodeLimits limits;
  limits.max_payload_bytes = std::size_t{16} << 20;
  auto decoded = kvcache::decode_batch(payload, limits);
  if (!decoded) {
    ++stats.dropped;
    return false;
  }
  index.apply_events(instance, decoded->batch, now);
  ++stats.applied;
  return true;
}

}  // namespace omni::sched
