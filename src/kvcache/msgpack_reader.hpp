// A minimal, defensive msgpack reader for the KV-event codec. Internal to omni_kvcache.
//
// It never trusts the input: every read is bounds-checked, a declared array/map/str/bin length
// is checked against the bytes that remain before anything is sized from it, and skip() (the
// only recursive walk over unknown data) stops at a nesting limit. Errors are kProtocol Results.
// A Reader is a cheap cursor (a span and an offset) and may be copied to look ahead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "omni/common/result.hpp"

namespace omni::kvcache::msgpack {

enum class Type { kNil, kBool, kInt, kFloat, kStr, kBin, kArray, kMap, kExt };

class Reader {
 public:
  Reader(std::span<const std::uint8_t> data, std::size_t max_depth)
      : data_(data), max_depth_(max_depth) {}

  bool at_end() const noexcept { return pos_ == data_.size(); }
  std::size_t remaining() const noexcept { return data_.size() - pos_; }
  std::size_t position() const noexcept { return pos_; }

  // The type of the next value, without consuming it.
  Result<Type> peek() const;
  // Consumes a nil and returns true when the next value is nil; otherwise consumes nothing.
  bool try_nil();

  Result<bool> read_bool();
  // Any msgpack int that fits the requested C++ type.
  Result<std::uint64_t> read_uint();
  Result<std::int64_t> read_int();
  // float64, float32, or any int (timestamps are "any number" to a lenient decoder).
  Result<double> read_number();
  Result<std::string_view> read_str();
  Result<std::span<const std::uint8_t>> read_bin();
  // Element counts; each is checked to fit the remaining input (one byte per element at least).
  Result<std::size_t> read_array_header();
  Result<std::size_t> read_map_header();

  // Skips one value of any type, nested at most max_depth levels deep.
  Status skip() { return skip_at_depth(0); }

 private:
  Status skip_at_depth(std::size_t depth);
  Status skip_ext();
  Result<std::uint64_t> take_be(std::size_t width);
  Result<std::size_t> read_length(std::uint8_t fix_base, std::uint8_t fix_mask, std::uint8_t op8,
                                  std::uint8_t op16, std::uint8_t op32, const char* what);
  Result<std::span<const std::uint8_t>> take(std::size_t n);

  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
  std::size_t max_depth_;
};

}  // namespace omni::kvcache::msgpack
