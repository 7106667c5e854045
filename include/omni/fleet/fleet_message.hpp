// What omni-proxy replicas of one fleet tell each other over NATS (docs/fleet.md): the load each
// replica has dispatched to each engine, as deltas when it changes and as full snapshots
// (which double as heartbeats), and a goodbye when it stops.
//
//   {"v":1,"fleet":"prod","replica":"gw-1:8000","epoch":"9f3c0a6e12b4d871","config":"5be1…",
//    "seq":42,"kind":"delta","loads":[{"node":"10.0.0.3:8000","tokens":4096,"prompt":3072,"running":1}]}
//
// `epoch` is random per process start (a restarted replica starts a new sequence); `config` is
// a digest of the settings that must agree across replicas (policy, PD mode, block size, hash
// seed and algorithm); `seq` increases by one per message of a replica. In a delta, `tokens`
// and `running` are signed changes; in a snapshot they are the replica's absolute counts. A
// prefix message carries {"node": ..., "blocks": [hash, ...]} instead of loads.
//
// The decoder trusts nothing: a message that is not exactly this shape, or exceeds the limits
// below, is an error (counted and dropped by the caller). Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::fleet {

// kPrefix: a placement's KV block hashes, predicted on `prefix_node` (the engine will hold them
// once it has prefilled them), so that a follow-up turn reaching another replica finds them.
enum class MessageKind : std::uint8_t { kDelta, kSnapshot, kBye, kPrefix };
std::string_view message_kind_name(MessageKind kind) noexcept;

struct NodeLoadEntry {
  std::string node;          // the engine's name (host:port), as every replica configures it
  std::int64_t tokens = 0;   // outstanding tokens (a change in a delta)
  std::int64_t prompt = 0;   // of which prompt tokens (a change in a delta)
  std::int64_t running = 0;  // requests in flight (a change in a delta)
  friend bool operator==(const NodeLoadEntry&, const NodeLoadEntry&) = default;
};

struct FleetMessage {
  std::string fleet;
  std::string replica;
  std::string epoch;
  std::string config;
  std::uint64_t seq = 0;
  MessageKind kind = MessageKind::kDelta;
  std::vector<NodeLoadEntry> loads;   // delta, snapshot
  std::string prefix_node;            // prefix
  std::vector<std::uint64_t> blocks;  // prefix: block hashes in KV-event form, prompt order
  friend bool operator==(const FleetMessage&, const FleetMessage&) = default;
};

// Limits on what a message may hold.
inline constexpr std::size_t kMaxMessageBytes = 1 << 20;
inline constexpr std::size_t kMaxLoads = 8192;
inline constexpr std::size_t kMaxBlocks = 65536;  // a 1M-token prompt at block size 16
inline constexpr std::size_t kMaxNameBytes = 256;
inline constexpr std::int64_t kMaxMagnitude = std::int64_t{1} << 48;

std::string encode(const FleetMessage& message);
// kInvalidArgument with what is wrong.
Result<FleetMessage> decode(std::string_view text);

}  // namespace omni::fleet
