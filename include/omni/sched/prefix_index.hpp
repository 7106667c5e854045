// The global prefix index (Omni Proxy's innovation 3): which instance holds which KV blocks,
// over all instances, so that a request can be sent where the longest prefix of its prompt is
// already cached.
//
// Fed two ways:
//  - exactly, from each engine's KV-cache events (BlockStored / BlockRemoved /
//    AllBlocksCleared, decoded by omni::kvcache): apply_events();
//  - approximately, by inserting a routed request's blocks with a short time-to-live
//    (insert_predicted()), to cover the window before the engine's own events arrive. An exact
//    BlockStored for the same block makes it permanent; the TTL makes a wrong guess fade.
//
// Lookups return, per instance, the number of leading blocks of a prompt that instance holds.
// Block hashes are chained (each depends on every block before it), so "instance has block i"
// implies it had blocks 0..i-1 when it stored it; the lookup still walks from block 0 and stops
// at the first gap, as the engine's own prefix match would.
//
// Memory is bounded: past max_entries, blocks not touched lately are dropped first (CLOCK, a
// cheap approximation of least-recently-used).
// Clearing or removing an instance is O(1) (a generation bump); its stale entries are reclaimed
// lazily. Pure: time is passed in, no threads, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "omni/kvcache/kv_events.hpp"

namespace omni::sched {

using InstanceId = std::uint32_t;

struct PrefixMatch {
  InstanceId instance = 0;
  std::uint32_t blocks = 0;  // leading blocks of the prompt the instance holds
};

struct PrefixIndexStats {
  std::size_t entries = 0;       // (block, instance) pairs held, stale ones included
  std::size_t blocks = 0;        // distinct block hashes
  std::size_t memory_bytes = 0;  // an estimate of what the index holds
  std::uint64_t events_applied = 0;
  std::uint64_t evicted = 0;  // dropped to stay under max_entries
};

struct PrefixIndexOptions {
  std::size_t max_entries = std::size_t{1} << 24;  // (block, instance) pairs
  double predicted_ttl_s = 2.0;                    // lifetime of an approximate insert
};

class PrefixIndex {
 public:
  explicit PrefixIndex(PrefixIndexOptions options = {});
  ~PrefixIndex();
  PrefixIndex(PrefixIndex&&) noexcept;
  PrefixIndex& operator=(PrefixIndex&&) noexcept;

  // Exact feed: one decoded batch of an instance's events. Byte-form hashes are folded to the
  // same 64-bit form kvcache::event_int() gives, so both event encodings index alike.
  void apply_events(InstanceId instance, const kvcache::KVEventBatch& batch, double now);
  void stored(InstanceId instance, std::span<const std::uint64_t> hashes, double now);
  void removed(InstanceId instance, std::span<const std::uint64_t> hashes);
  void cleared(InstanceId instance);
  // Approximate feed: the blocks a request routed to `instance` will store.
  void insert_predicted(InstanceId instance, std::span<const std::uint64_t> hashes, double now);
  // The instance failed or left the pool: forget everything it held.
  void remove_instance(InstanceId instance) { cleared(instance); }

  // Every instance holding a prefix of `hashes`, with its length (longest first; ties by id).
  // Predicted entries older than their TTL do not count.
  std::vector<PrefixMatch> match(std::span<const std::uint64_t> hashes, double now) const;
  // The matched blocks of one instance (0 if none).
  std::uint32_t match_instance(InstanceId instance, std::span<const std::uint64_t> hashes,
                               double now) const;

  PrefixIndexStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The 64-bit form of an event hash (integer as is; bytes folded like kvcache::event_int()).
std::uint64_t event_hash_key(const kvcache::EventHash& hash);

}  // namespace omni::sched
