// Open-addressing hash tables for the encoder's hot path: merge ranks keyed by a pair of ids,
// and string keys (vocabulary, word cache). Linear probing over a power-of-two table kept at most
// half full; no deletion (the word cache is cleared as a whole when full).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <xxhash.h>

namespace omni::tokenizer {

inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline std::size_t table_size_for(std::size_t entries) {
  std::size_t size = 16;
  while (size < entries * 2) size <<= 1;
  return size;
}

// (left id, right id) -> (rank, merged id).
class PairMap {
 public:
  struct Value {
    std::uint32_t rank;
    std::uint32_t merged;
  };
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  void reserve(std::size_t entries) {
    slots_.assign(table_size_for(entries), Slot{kEmpty, {0, 0}});
    mask_ = slots_.size() - 1;
  }
  static std::uint64_t key(std::uint32_t left, std::uint32_t right) noexcept {
    return (std::uint64_t{left} << 32) | right;
  }
  // Keeps the first value inserted for a key (the lowest rank, as merges are inserted in order).
  void insert(std::uint64_t k, Value v) {
    std::size_t i = mix64(k) & mask_;
    while (slots_[i].key != kEmpty) {
      if (slots_[i].key == k) return;
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{k, v};
  }
  const Value* find(std::uint64_t k) const noexcept {
    std::size_t i = mix64(k) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == k) return &s.value;
      if (s.key == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }

 private:
  struct Slot {
    std::uint64_t key;
    Value value;
  };
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

// string -> V. Keys are stored once in an arena; lookups take string_view.
template <class V>
class StringMap {
 public:
  void reserve(std::size_t entries) {
    slots_.assign(table_size_for(entries), kNone);
    mask_ = slots_.size() - 1;
    entries_.reserve(entries);
  }
  std::size_t size() const noexcept { return entries_.size(); }
  void clear() {
    std::fill(slots_.begin(), slots_.end(), kNone);
    entries_.clear();
    arena_.clear();
  }
  // Inserts if absent; returns false when the key was already present (value kept).
  bool insert(std::string_view key, V value) {
    if ((entries_.size() + 1) * 2 > slots_.size()) grow();
    const std::uint64_t h = XXH3_64bits(key.data(), key.size());
    std::size_t i = h & mask_;
    while (slots_[i] != kNone) {
      if (matches(entries_[slots_[i]], h, key)) return false;
      i = (i + 1) & mask_;
    }
    slots_[i] = static_cast<std::uint32_t>(entries_.size());
    entries_.push_back(Entry{h, static_cast<std::uint32_t>(arena_.size()),
                             static_cast<std::uint32_t>(key.size()), std::move(value)});
    arena_.append(key);
    return true;
  }
  const V* find(std::string_view key) const noexcept {
    if (slots_.empty()) return nullptr;
    const std::uint64_t h = XXH3_64bits(key.data(), key.size());
    std::size_t i = h & mask_;
    while (slots_[i] != kNone) {
      const Entry& e = entries_[slots_[i]];
      if (matches(e, h, key)) return &e.value;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }
  std::size_t arena_bytes() const noexcept { return arena_.size(); }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Entry {
    std::uint64_t hash;
    std::uint32_t offset;
    std::uint32_t length;
    V value;
  };
  bool matches(const Entry& e, std::uint64_t h, std::string_view key) const noexcept {
    return e.hash == h && e.length == key.size() &&
           std::string_view(arena_).substr(e.offset, e.length) == key;
  }
  void grow() {
    slots_.assign(table_size_for(entries_.size() + 1 > 8 ? (entries_.size() + 1) * 2 : 16), kNone);
    mask_ = slots_.size() - 1;
    for (std::uint32_t idx = 0; idx < entries_.size(); ++idx) {
      std::size_t i = entries_[idx].hash & mask_;
      while (slots_[i] != kNone) i = (i + 1) & mask_;
      slots_[i] = idx;
    }
  }
  std::vector<std::uint32_t> slots_;
  std::vector<Entry> entries_;
  std::string arena_;
  std::size_t mask_ = 0;
};

}  // namespace omni::tokenizer
