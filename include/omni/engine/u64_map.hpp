// U64Map: a flat open-addressing hash map from 64-bit keys to 32-bit values (linear probing,
// backward-shift deletion, no tombstones). The engine's two lookups (block hash -> block,
// request id -> slot) run on every admission and eviction of thousands of simulated engines;
// std::unordered_map's node per entry made them the hot spot.
#pragma once

#include <cstdint>
#include <vector>

namespace omni::engine {

class U64Map {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;  // "absent"; not storable as a value

  std::uint32_t find(std::uint64_t key) const {
    if (size_ == 0) return kNone;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.value == kNone) return kNone;
      if (e.key == key) return e.value;
    }
  }
  bool contains(std::uint64_t key) const { return find(key) != kNone; }

  // Inserts key -> value; false (and no change) when the key is present.
  bool insert(std::uint64_t key, std::uint32_t value) {
    if ((size_ + 1) * 4 > entries_.size() * 3) grow();
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Entry& e = entries_[i];
      if (e.value == kNone) {
        e = Entry{key, value};
        ++size_;
        return true;
      }
      if (e.key == key) return false;
    }
  }

  bool erase(std::uint64_t key) {
    if (size_ == 0) return false;
    std::size_t i = home(key);
    while (true) {
      if (entries_[i].value == kNone) return false;
      if (entries_[i].key == key) break;
      i = (i + 1) & mask_;
    }
    // Backward shift: pull later entries of the probe run into the hole when their home
    // position allows it, so that lookups never need tombstones.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask_; entries_[j].value != kNone; j = (j + 1) & mask_) {
      const std::size_t h = home(entries_[j].key);
      const bool movable = ((j - h) & mask_) >= ((j - hole) & mask_);
      if (movable) {
        entries_[hole] = entries_[j];
        hole = j;
      }
    }
    entries_[hole].value = kNone;
    --size_;
    return true;
  }

  void clear() {
    for (Entry& e : entries_) e.value = kNone;
    size_ = 0;
  }
  std::size_t size() const { return size_; }

 private:
  // 12 bytes, not 16: simulators hold one entry per cached block of thousands of engines.
#pragma pack(push, 4)
  struct Entry {
    std::uint64_t key = 0;
    std::uint32_t value = kNone;
  };
#pragma pack(pop)
  static_assert(sizeof(Entry) == 12);

  std::size_t home(std::uint64_t key) const {
    // Fibonacci hashing: sequential keys (ids, synthetic hashes) spread over the table.
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

  void grow() {
    std::vector<Entry> old;
    old.swap(entries_);
    const std::size_t capacity = old.empty() ? 16 : old.size() * 2;
    entries_.assign(capacity, Entry{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (std::size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (const Entry& e : old) {
      if (e.value != kNone) insert(e.key, e.value);
    }
  }

  std::vector<Entry> entries_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace omni::engine
