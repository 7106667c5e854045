// Frame helpers shared by the ZeroMQ publisher and subscriber (private to omni_kvcache_zmq).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace omni::kvcache::zmq_wire {

// Frame 2 of every message: the batch sequence number, 8 bytes big-endian.
inline std::array<std::uint8_t, 8> encode_seq(std::uint64_t seq) {
  std::array<std::uint8_t, 8> out{};
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(seq & 0xffu);
    seq >>= 8;
  }
  return out;
}

// nullopt unless exactly 8 bytes.
inline std::optional<std::uint64_t> decode_seq(std::span<const std::uint8_t> bytes) {
  if (bytes.size() != 8) return std::nullopt;
  std::uint64_t seq = 0;
  for (std::uint8_t b : bytes) seq = (seq << 8) | b;
  return seq;
}

// The replay terminator's sequence: −1 as a signed 8-byte big-endian integer.
inline constexpr std::uint64_t kReplayEnd = ~std::uint64_t{0};

}  // namespace omni::kvcache::zmq_wire
