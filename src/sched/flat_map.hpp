// A small open-addressing hash map from 64-bit keys to 32-bit values: linear probing over a
// power-of-two table kept at most half full (short probe runs), 16-byte slots, deletion by
// backward shift (no tombstones). Values must be below 0xffffffff (the empty marker). The prefix
// index does tens of millions of lookups a second; std::unordered_map's node per entry costs too
// much there.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace omni::sched::detail {

class FlatMap64 {
 public:
  FlatMap64() { rehash(16); }

  std::optional<std::uint32_t> find(std::uint64_t key) const {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kEmpty) return std::nullopt;
      if (s.key == key) return s.value;
    }
  }

  // Hints the cache to load `key`'s home slot: batch callers issue it a few keys ahead so the
  // table's cache misses overlap instead of queueing one after another.
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&slots_[home(key)]); }

  // Inserts or overwrites.
  void put(std::uint64_t key, std::uint32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kEmpty) {
        s = Slot{key, value};
        ++size_;
        return;
      }
      if (s.key == key) {
        s.value = value;
        return;
      }
    }
  }

  bool erase(std::uint64_t key) {
    std::size_t i = home(key);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].value == kEmpty) return false;
      if (slots_[i].key == key) break;
    }
    // Backward-shift: move later members of the probe run into the hole when their home
    // position allows it, so that lookups never need tombstones.
    std::size_t hole = i;
    for (std::size_t j = (hole + 1) & mask_; slots_[j].value != kEmpty; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].value = kEmpty;
    --size_;
    return true;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t value = kEmpty;
  };

  std::size_t home(std::uint64_t key) const {
    key ^= key >> 33;  // murmur3's finaliser: hashes may be small integers in tests and traces
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<std::size_t>(key) & mask_;
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.value != kEmpty) put(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace omni::sched::detail
