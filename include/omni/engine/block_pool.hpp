// The paged KV cache's block pool, shaped like vLLM v1's BlockPool + FreeKVCacheBlockQueue.
//
//   blocks_[id]: { ref_count, hash (when cached), prev/next in the free queue }
//
//   free queue (LRU order, evict from the head):
//     head -> [b7 cached] <-> [b2] <-> [b9 cached] <-> ... <-> [b4] <- tail
//             allocate() takes the head; a freed block goes to the tail; a cached free block
//             that a new request hits is unlinked from the middle (touch()).
//
//   cache_: block hash -> block id, for full blocks whose content is known (prefix caching).
//
// A block with ref_count 0 is in the free queue; if it still has a hash it is "cached free":
// reusable by a prefix hit until allocate() evicts it (then a BlockRemoved event is emitted).
// Pure, single-threaded; no allocation per operation once the cache map has grown. Memory grows
// with the peak number of blocks in use, not with the pool size (never-used blocks are implicit).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "omni/engine/u64_map.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::engine {

using BlockId = std::uint32_t;

class BlockPool {
 public:
  // `events` (may be null) receives BlockStored / BlockRemoved / AllBlocksCleared.
  BlockPool(std::uint32_t num_blocks, std::uint32_t block_size,
            std::vector<kvcache::KVEvent>* events);

  std::uint32_t num_blocks() const { return num_blocks_; }
  std::uint32_t block_size() const { return block_size_; }
  std::uint32_t num_free() const { return num_free_; }  // in the free queue, cached or not
  std::uint32_t num_used() const { return num_blocks() - num_free_; }

  // Takes the block at the head of the free queue (evicting its hash if cached), ref 1.
  // Callers check num_free() first; returns nullopt when the queue is empty.
  std::optional<BlockId> allocate();
  // One more reference to a block (a prefix hit); a free block leaves the free queue.
  void touch(BlockId id);
  // Drops one reference; at zero the block goes to the tail of the free queue (keeping its
  // hash, so it stays reusable until evicted).
  void release(BlockId id);
  // Releases a request's blocks in reverse order, as vLLM does: the tail of a sequence is
  // evicted before its (more shareable) head.
  void release_all(std::span<const BlockId> ids);

  // The cached block holding `hash`, if any.
  std::optional<BlockId> lookup(std::uint64_t hash) const;
  bool is_free(BlockId id) const { return id >= blocks_.size() || blocks_[id].ref_count == 0; }
  // Registers a full block under `hash`. False (and nothing changes) when another block already
  // holds that hash or this block is already cached: the block then stays private.
  bool cache(BlockId id, std::uint64_t hash);

  // Forgets every cached hash (vLLM's reset_prefix_cache); only when no block is in use.
  // Emits AllBlocksCleared. Returns false (nothing changes) while blocks are in use.
  bool reset_prefix_cache();

  std::size_t num_cached() const { return cache_.size(); }

 private:
  static constexpr BlockId kNone = 0xffffffffu;
  // 20 bytes: a pool of 10^5..10^6 blocks per engine, thousands of engines per simulation.
#pragma pack(push, 4)
  struct Block {
    std::uint64_t hash = 0;
    BlockId prev = kNone;
    BlockId next = kNone;
    std::uint32_t ref_count : 31 = 0;
    std::uint32_t cached : 1 = 0;
  };
#pragma pack(pop)
  static_assert(sizeof(Block) == 20);

  void push_tail(BlockId id);
  void unlink(BlockId id);
  void evict(BlockId id);

  // Blocks [blocks_.size(), num_blocks_) were never used: they form the front of the free
  // queue implicitly (vLLM's initial queue is every block in id order, and freed blocks go to
  // the tail), so memory grows with the peak usage, not the pool size.
  std::vector<Block> blocks_;
  std::uint32_t num_blocks_;
  U64Map cache_;  // block hash -> block id
  std::uint32_t block_size_;
  std::uint32_t num_free_ = 0;
  BlockId head_ = kNone;
  BlockId tail_ = kNone;
  std::vector<kvcache::KVEvent>* events_;
};

}  // namespace omni::engine
