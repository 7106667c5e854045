#include "omni/sched/prefix_index.hpp"

#include <algorithm>
#include <memory>

#include "flat_map.hpp"

namespace omni::sched {

std::uint64_t event_hash_key(const kvcache::EventHash& hash) {
  if (const auto* value = std::get_if<std::uint64_t>(&hash)) return *value;
  // Bytes: the last (up to) 8, big-endian — what kvcache::event_int() gives for the same block.
  const auto& bytes = std::get<std::vector<std::uint8_t>>(hash);
  const std::size_t start = bytes.size() > 8 ? bytes.size() - 8 : 0;
  std::uint64_t value = 0;
  for (std::size_t i = start; i < bytes.size(); ++i) value = (value << 8) | bytes[i];
  return value;
}

namespace {

struct Holder {
  InstanceId instance = 0;
  std::uint32_t generation = 0;
  double expires = 0.0;  // 0: exact (from an event); else the end of a predicted entry's life
};

// Most blocks are held by one or two instances: keep those in the block itself (one cache line
// per lookup step) and spill the rest to the heap.
class Holders {
 public:
  Holder* begin() { return size_ <= kInline ? inline_ : spill_->data(); }
  Holder* end() { return begin() + size_; }
  const Holder* begin() const { return size_ <= kInline ? inline_ : spill_->data(); }
  const Holder* end() const { return begin() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Holder& back() { return begin()[size_ - 1]; }
  void clear() {
    size_ = 0;
    spill_.reset();
  }
  void push_back(const Holder& h) {
    if (size_ < kInline) {
      inline_[size_++] = h;
      return;
    }
    if (size_ == kInline)
      spill_ = std::make_unique<std::vector<Holder>>(inline_, inline_ + kInline);
    spill_->push_back(h);
    ++size_;
  }
  void pop_back() {
    if (size_ > kInline) {
      spill_->pop_back();
      if (--size_ == kInline) {
        std::copy(spill_->begin(), spill_->end(), inline_);
        spill_.reset();
      }
      return;
    }
    --size_;
  }

 private:
  static constexpr std::uint32_t kInline = 2;
  Holder inline_[kInline];
  std::unique_ptr<std::vector<Holder>> spill_;
  std::uint32_t size_ = 0;
};

// One cache line per block. `referenced` is CLOCK's second-chance bit (see enforce_bound).
struct alignas(64) Block {
  std::uint64_t hash = 0;
  Holders holders;
  bool live = false;        // false: on the free list
  bool referenced = false;  // touched since the clock hand last passed
};

}  // namespace

struct PrefixIndex::Impl {
  PrefixIndexOptions options;
  detail::FlatMap64 where;  // hash -> index in blocks
  std::vector<Block> blocks;
  std::vector<std::uint32_t> free_blocks;
  std::vector<std::uint32_t> generations;  // per instance
  std::size_t clock_hand = 0;              // next block CLOCK considers for eviction
  std::size_t entries = 0;
  std::uint64_t events_applied = 0;
  std::uint64_t evicted = 0;

  std::uint32_t generation(InstanceId instance) {
    if (instance >= generations.size()) generations.resize(instance + 1, 0);
    return generations[instance];
  }
  std::uint32_t generation_of(InstanceId instance) const {
    return instance < generations.size() ? generations[instance] : 0;
  }

  bool valid(const Holder& h, double now) const {
    return h.generation == generation_of(h.instance) && (h.expires == 0.0 || h.expires > now);
  }

  std::uint32_t find_or_create(std::uint64_t hash) {
    if (auto id = where.find(hash)) {
      blocks[*id].referenced = true;
      return *id;
    }
    std::uint32_t id;
    if (!free_blocks.empty()) {
      id = free_blocks.back();
      free_blocks.pop_back();
    } else {
      id = static_cast<std::uint32_t>(blocks.size());
      blocks.emplace_back();
    }
    Block& b = blocks[id];
    b.hash = hash;
    b.holders.clear();
    b.live = true;
    b.referenced = true;
    where.put(hash, id);
    return id;
  }

  void drop_block(std::uint32_t id) {
    Block& b = blocks[id];
    entries -= b.holders.size();
    b.holders.clear();
    b.live = false;
    where.erase(b.hash);
    free_blocks.push_back(id);
  }

  // Adds or refreshes `instance` on a block. Exact entries are never downgraded to predicted.
  void hold(std::uint32_t id, InstanceId instance, double expires) {
    const std::uint32_t gen = generation(instance);
    Holders& holders = blocks[id].holders;
    for (Holder& h : holders) {
      if (h.instance != instance) continue;
      const bool was_exact = h.generation == gen && h.expires == 0.0;
      h.generation = gen;
      h.expires = was_exact ? 0.0 : expires;
      return;
    }
    // Reuse a holder slot whose generation is over (its instance was cleared).
    for (Holder& h : holders) {
      if (h.generation != generation_of(h.instance)) {
        h = Holder{instance, gen, expires};
        return;
      }
    }
    holders.push_back(Holder{instance, gen, expires});
    ++entries;
  }

  // CLOCK (second chance), an approximation of least-recently-used that costs one flag per
  // touch instead of two linked-list updates (each a cache miss): the hand sweeps the blocks,
  // clearing `referenced` bits, and drops the first block it finds not touched since its last
  // pass.
  void enforce_bound() {
    while (entries > options.max_entries && !blocks.empty()) {
      if (clock_hand >= blocks.size()) clock_hand = 0;
      Block& b = blocks[clock_hand];
      if (b.live && !b.referenced) {
        ++evicted;
        drop_block(static_cast<std::uint32_t>(clock_hand));
      } else {
        b.referenced = false;
      }
      ++clock_hand;
    }
  }
};

PrefixIndex::PrefixIndex(PrefixIndexOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
}
PrefixIndex::~PrefixIndex() = default;
PrefixIndex::PrefixIndex(PrefixIndex&&) noexcept = default;
PrefixIndex& PrefixIndex::operator=(PrefixIndex&&) noexcept = default;

namespace {
// How many keys ahead batch operations prefetch their hash-table slots.
constexpr std::size_t kPrefetchAhead = 8;
}  // namespace

void PrefixIndex::stored(InstanceId instance, std::span<const std::uint64_t> hashes, double) {
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kPrefetchAhead < hashes.size()) impl_->where.prefetch(hashes[i + kPrefetchAhead]);
    impl_->hold(impl_->find_or_create(hashes[i]), instance, 0.0);
  }
  impl_->enforce_bound();
}

void PrefixIndex::insert_predicted(InstanceId instance, std::span<const std::uint64_t> hashes,
                                   double now) {
  const double expires = now + std::max(impl_->options.predicted_ttl_s, 1e-9);
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kPrefetchAhead < hashes.size()) impl_->where.prefetch(hashes[i + kPrefetchAhead]);
    impl_->hold(impl_->find_or_create(hashes[i]), instance, expires);
  }
  impl_->enforce_bound();
}

void PrefixIndex::removed(InstanceId instance, std::span<const std::uint64_t> hashes) {
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kPrefetchAhead < hashes.size()) impl_->where.prefetch(hashes[i + kPrefetchAhead]);
    const auto id = impl_->where.find(hashes[i]);
    if (!id) continue;
    Holders& holders = impl_->blocks[*id].holders;
    const auto it = std::find_if(holders.begin(), holders.end(),
                                 [&](const Holder& h) { return h.instance == instance; });
    if (it == holders.end()) continue;
    *it = holders.back();
    holders.pop_back();
    --impl_->entries;
    if (holders.empty()) impl_->drop_block(*id);
  }
}

void PrefixIndex::cleared(InstanceId instance) {
  impl_->generation(instance);
  ++impl_->generations[instance];
}

void PrefixIndex::apply_events(InstanceId instance, const kvcache::KVEventBatch& batch,
                               double now) {
  std::vector<std::uint64_t> keys;
  for (const kvcache::KVEvent& event : batch.events) {
    ++impl_->events_applied;
    if (const auto* stored_event = std::get_if<kvcache::BlockStored>(&event)) {
      keys.clear();
      for (const auto& h : stored_event->block_hashes) keys.push_back(event_hash_key(h));
      stored(instance, keys, now);
    } else if (const auto* removed_event = std::get_if<kvcache::BlockRemoved>(&event)) {
      keys.clear();
      for (const auto& h : removed_event->block_hashes) keys.push_back(event_hash_key(h));
      removed(instance, keys);
    } else {
      cleared(instance);
    }
  }
}

std::vector<PrefixMatch> PrefixIndex::match(std::span<const std::uint64_t> hashes,
                                            double now) const {
  std::vector<PrefixMatch> out;      // finished candidates
  std::vector<PrefixMatch> running;  // still matching at depth i
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kPrefetchAhead < hashes.size()) impl_->where.prefetch(hashes[i + kPrefetchAhead]);
    const auto id = impl_->where.find(hashes[i]);
    if (!id) break;
    const Holders& holders = impl_->blocks[*id].holders;
    if (i == 0) {
      for (const Holder& h : holders) {
        if (impl_->valid(h, now)) running.push_back(PrefixMatch{h.instance, 1});
      }
    } else {
      // Keep the candidates that also hold block i; the others stop at depth i.
      std::size_t kept = 0;
      for (PrefixMatch& candidate : running) {
        const bool holds = std::any_of(holders.begin(), holders.end(), [&](const Holder& h) {
          return h.instance == candidate.instance && impl_->valid(h, now);
        });
        if (holds) {
          ++candidate.blocks;
          running[kept++] = candidate;
        } else {
          out.push_back(candidate);
        }
      }
      running.resize(kept);
    }
    if (running.empty()) break;
  }
  out.insert(out.end(), running.begin(), running.end());
  std::sort(out.begin(), out.end(), [](const PrefixMatch& a, const PrefixMatch& b) {
    return a.blocks != b.blocks ? a.blocks > b.blocks : a.instance < b.instance;
  });
  return out;
}

std::uint32_t PrefixIndex::match_instance(InstanceId instance,
                                          std::span<const std::uint64_t> hashes, double now) const {
  std::uint32_t depth = 0;
  for (const std::uint64_t hash : hashes) {
    const auto id = impl_->where.find(hash);
    if (!id) break;
    const auto& holders = impl_->blocks[*id].holders;
    const bool holds = std::any_of(holders.begin(), holders.end(), [&](const Holder& h) {
      return h.instance == instance && impl_->valid(h, now);
    });
    if (!holds) break;
    ++depth;
  }
  return depth;
}

PrefixIndexStats PrefixIndex::stats() const {
  PrefixIndexStats s;
  s.entries = impl_->entries;
  s.blocks = impl_->where.size();
  s.memory_bytes = impl_->where.capacity() * 24 + impl_->blocks.size() * sizeof(Block) +
                   impl_->entries * sizeof(Holder);
  s.events_applied = impl_->events_applied;
  s.evicted = impl_->evicted;
  return s;
}

}  // namespace omni::sched
