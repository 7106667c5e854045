// vLLM KV-cache events (spec §2): the msgpack payload of frame 3 of a ZMQ PUB message.
//
//   KVEventBatch = [ ts: float64, events: [event, ...], data_parallel_rank: int|nil ]
//   BlockStored      = ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
//                       lora_id, medium, lora_name, extra_keys, group_idx,
//                       kv_cache_spec_kind, kv_cache_spec_sliding_window]
//   BlockRemoved     = ["BlockRemoved", block_hashes, medium, group_idx]
//   AllBlocksCleared = ["AllBlocksCleared"]
//
// Encoding is byte-exact with the reference vLLM commit (array layout, every field written) or,
// on request, the later tagged-map layout (§2.9). Decoding is lenient (shorter arrays from older
// servers, the map layout, int or bytes hashes, unknown event tags skipped) and never trusts its
// input: malformed payloads are kProtocol errors, size limits are kTooLarge errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/kvcache/block_hash.hpp"

namespace omni::kvcache {

// A block hash as an event carries it: the 64-bit integer form (event_int(), the default) or
// the raw hash bytes (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0, or the CPU-offloading connector).
using EventHash = std::variant<std::uint64_t, std::vector<std::uint8_t>>;

struct BlockStored {
  std::vector<EventHash> block_hashes;         // the new blocks, in token order
  std::optional<EventHash> parent_block_hash;  // nil when the run starts at block 0
  std::vector<std::uint32_t> token_ids;        // all tokens of the new blocks
  std::int64_t block_size = 0;
  std::optional<std::int64_t> lora_id;   // deprecated integer id
  std::optional<std::string> medium;     // "GPU", "CPU", ...
  std::optional<std::string> lora_name;  // the name that enters the hash
  // One entry per block hash; an empty ExtraKeys is nil. The whole field may be nil.
  std::optional<std::vector<ExtraKeys>> extra_keys;
  std::optional<std::int64_t> group_idx;
  std::optional<std::string> kv_cache_spec_kind;  // "full_attention", "sliding_window", ...
  std::optional<std::int64_t> kv_cache_spec_sliding_window;
  friend bool operator==(const BlockStored&, const BlockStored&) = default;
};

struct BlockRemoved {
  std::vector<EventHash> block_hashes;
  std::optional<std::string> medium;
  std::optional<std::int64_t> group_idx;
  friend bool operator==(const BlockRemoved&, const BlockRemoved&) = default;
};

struct AllBlocksCleared {
  friend bool operator==(const AllBlocksCleared&, const AllBlocksCleared&) = default;
};

using KVEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

struct KVEventBatch {
  double ts = 0.0;  // time.time() of the scheduler step
  std::vector<KVEvent> events;
  std::optional<std::int64_t> data_parallel_rank;  // absent from servers before 2025-06
  friend bool operator==(const KVEventBatch&, const KVEventBatch&) = default;
};

enum class EventLayout {
  kArray,  // the reference commit: array_like structs, all fields written
  kMap,    // after vLLM PR #42892 (unverified, §2.9): tagged maps, nil defaults omitted
};

// Appends the msgpack payload of `batch` to `out`.
void encode_batch(const KVEventBatch& batch, std::vector<std::uint8_t>& out,
                  EventLayout layout = EventLayout::kArray);
std::vector<std::uint8_t> encode_batch(const KVEventBatch& batch,
                                       EventLayout layout = EventLayout::kArray);

struct DecodeLimits {
  std::size_t max_payload_bytes = std::size_t{64} << 20;  // larger payloads: kTooLarge
  std::size_t max_events = 1u << 16;                      // events per batch
  std::size_t max_depth = 16;                             // nesting of skipped unknown values
};

struct DecodedBatch {
  KVEventBatch batch;
  std::size_t skipped_events = 0;  // events with an unknown tag, left out of batch.events
};

Result<DecodedBatch> decode_batch(std::span<const std::uint8_t> payload,
                                  const DecodeLimits& limits = {});

}  // namespace omni::kvcache
