// Feeding the prefix index from raw KV-event payloads, as they come off an engine's ZeroMQ
// stream: decoded with omni::kvcache (never trusting the bytes), applied when valid, counted and
// dropped when not. Shared by the gateway, the fuzz target and its regression test.
#pragma once

#include <cstdint>
#include <span>

#include "omni/kvcache/kv_events.hpp"
#include "omni/sched/prefix_index.hpp"

namespace omni::sched {

struct EventFeedStats {
  std::uint64_t applied = 0;  // payloads decoded and applied
  std::uint64_t dropped = 0;  // malformed payloads
};

// Decodes one payload and applies it to `instance`'s entries. False (and nothing applied) when
// the payload is malformed.
bool feed_payload(PrefixIndex& index, InstanceId instance, std::span<const std::uint8_t> payload,
                  double now, EventFeedStats& stats);

}  // namespace omni::sched
