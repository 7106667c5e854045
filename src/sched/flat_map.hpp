// A small open-addressing hash map from 64-bit keys to 32-bit values: linear probing over a
// power-of-two table, deletion by backward shift (no tombstones). The prefix index does tens of
// millions of lookups a second; std::unordered_map's node per entry costs too much there.
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
      if (!s.used) return std::nullopt;
      if (s.key == key) return s.value;
    }
  }

  // Inserts or overwrites.
  void put(std::uint64_t key, std::uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) {
        s = Slot{key, value, true};
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
      if (!slots_[i].used) return false;
      if (slots_[i].key == key) break;
    }
    // Backward-shift: move later members of the probe run into the hole when their home
    // position allows it, so that lookups never need tombstones.
    std::size_t hole = i;
    for (std::size_t j = (hole + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].used = false;
    --size_;
    return true;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t value = 0;
    bool used = false;
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
      if (s.used) put(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace omni::sched::detail
