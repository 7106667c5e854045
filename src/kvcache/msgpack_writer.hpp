// A minimal msgpack writer for the KV-event codec: every value in its smallest form, as msgspec
// and Python msgpack (use_bin_type=True) write it (spec §2.3). Internal to omni_kvcache.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace omni::kvcache::msgpack {

class Writer {
 public:
  explicit Writer(std::vector<std::uint8_t>& out) : out_(out) {}

  void nil() { out_.push_back(0xc0); }
  void boolean(bool value) { out_.push_back(value ? 0xc3 : 0xc2); }
  void uint(std::uint64_t value);
  void sint(std::int64_t value);  // non-negative values use the unsigned forms, like msgspec
  void float64(double value);     // Python floats are always written as float64
  void str(std::string_view text);
  void bin(std::span<const std::uint8_t> bytes);
  void array_header(std::size_t size);
  void map_header(std::size_t size);

 private:
  void put_be(std::uint64_t value, std::size_t width);

  std::vector<std::uint8_t>& out_;
};

}  // namespace omni::kvcache::msgpack
