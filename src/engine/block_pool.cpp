// The KV block pool: see include/omni/engine/block_pool.hpp for the layout.
#include "omni/engine/block_pool.hpp"

#include <cassert>

namespace omni::engine {

BlockPool::BlockPool(std::uint32_t num_blocks, std::uint32_t block_size,
                     std::vector<kvcache::KVEvent>* events)
    : num_blocks_(num_blocks), block_size_(block_size), num_free_(num_blocks), events_(events) {}

void BlockPool::push_tail(BlockId id) {
  Block& b = blocks_[id];
  b.prev = tail_;
  b.next = kNone;
  if (tail_ != kNone) {
    blocks_[tail_].next = id;
  } else {
    head_ = id;
  }
  tail_ = id;
  ++num_free_;
}

void BlockPool::unlink(BlockId id) {
  Block& b = blocks_[id];
  if (b.prev != kNone) {
    blocks_[b.prev].next = b.next;
  } else {
    head_ = b.next;
  }
  if (b.next != kNone) {
    blocks_[b.next].prev = b.prev;
  } else {
    tail_ = b.prev;
  }
  b.prev = b.next = kNone;
  --num_free_;
}

void BlockPool::evict(BlockId id) {
  Block& b = blocks_[id];
  if (!b.cached) return;
  const std::uint64_t hash = b.hash;  // a copy: the packed member may be misaligned
  cache_.erase(hash);
  b.cached = 0;
  if (events_ != nullptr) {
    kvcache::BlockRemoved removed;
    removed.block_hashes.emplace_back(hash);
    removed.medium = "GPU";
    events_->emplace_back(std::move(removed));
  }
}

std::optional<BlockId> BlockPool::allocate() {
  if (blocks_.size() < num_blocks_) {  // the implicit, never-used front of the queue
    const auto id = static_cast<BlockId>(blocks_.size());
    Block fresh;
    fresh.ref_count = 1;
    blocks_.push_back(fresh);
    --num_free_;
    return id;
  }
  if (head_ == kNone) return std::nullopt;
  const BlockId id = head_;
  unlink(id);
  evict(id);
  blocks_[id].ref_count = 1;
  return id;
}

void BlockPool::touch(BlockId id) {
  Block& b = blocks_[id];
  if (b.ref_count == 0) unlink(id);
  ++b.ref_count;
}

void BlockPool::release(BlockId id) {
  Block& b = blocks_[id];
  assert(b.ref_count > 0);
  if (--b.ref_count == 0) push_tail(id);
}

void BlockPool::release_all(std::span<const BlockId> ids) {
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) release(*it);
}

std::optional<BlockId> BlockPool::lookup(std::uint64_t hash) const {
  const std::uint32_t id = cache_.find(hash);
  if (id == U64Map::kNone) return std::nullopt;
  return id;
}

bool BlockPool::cache(BlockId id, std::uint64_t hash) {
  Block& b = blocks_[id];
  if (b.cached) return false;
  if (!cache_.insert(hash, id)) return false;
  b.cached = 1;
  b.hash = hash;
  return true;
}

bool BlockPool::reset_prefix_cache() {
  if (num_used() != 0) return false;
  for (Block& b : blocks_) b.cached = 0;  // never-used blocks hold no hash
  cache_.clear();
  if (events_ != nullptr) events_->emplace_back(kvcache::AllBlocksCleared{});
  return true;
}

}  // namespace omni::engine
