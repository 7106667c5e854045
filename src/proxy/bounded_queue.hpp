// A bounded lock-free multi-producer, multi-consumer queue (Dmitry Vyukov's array queue): each cell
// carries a sequence number that says whose turn it is, so producers claim cells with one CAS and
// never block each other or the consumer. A full queue refuses (try_push returns false): the caller
// picks the overflow policy.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace omni::proxy::detail {

template <class T>
class BoundedQueue {
 public:
  // `capacity` is rounded up to a power of two.
  explicit BoundedQueue(std::size_t capacity) {
    std::size_t size = 2;
    while (size < capacity) size *= 2;
    mask_ = size - 1;
    cells_ = std::make_unique<Cell[]>(size);
    for (std::size_t i = 0; i < size; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }

  // `value` is moved from only on success, so a caller may retry with the same object.
  template <class U>
  bool try_push(U&& value) {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = std::forward<U>(value);
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // Whether the queue looked empty at some instant (a hint: producers may be mid-push).
  bool looks_empty() const noexcept {
    return tail_.load(std::memory_order_seq_cst) == head_.load(std::memory_order_seq_cst);
  }

  std::optional<T> try_pop() {
    std::size_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::size_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos + 1);
      if (diff == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          std::optional<T> value(std::move(cell.value));
          cell.value = T{};
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return value;
        }
      } else if (diff < 0) {
        return std::nullopt;  // empty
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }

 private:
  struct Cell {
    std::atomic<std::size_t> sequence{0};
    T value{};
  };
  static constexpr std::size_t kLine = 64;
  std::unique_ptr<Cell[]> cells_;
  std::size_t mask_ = 0;
  alignas(kLine) std::atomic<std::size_t> tail_{0};
  alignas(kLine) std::atomic<std::size_t> head_{0};
};

}  // namespace omni::proxy::detail
