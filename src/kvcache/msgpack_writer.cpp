#include "msgpack_writer.hpp"

#include <bit>
#include <cstdint>

namespace omni::kvcache::msgpack {

void Writer::put_be(std::uint64_t value, std::size_t width) {
  for (std::size_t i = width; i > 0; --i) {
    out_.push_back(static_cast<std::uint8_t>(value >> (8 * (i - 1))));
  }
}

void Writer::uint(std::uint64_t value) {
  if (value < 0x80) {
    out_.push_back(static_cast<std::uint8_t>(value));  // positive fixint
  } else if (value <= 0xff) {
    out_.push_back(0xcc);
    put_be(value, 1);
  } else if (value <= 0xffff) {
    out_.push_back(0xcd);
    put_be(value, 2);
  } else if (value <= 0xffffffffULL) {
    out_.push_back(0xce);
    put_be(value, 4);
  } else {
    out_.push_back(0xcf);
    put_be(value, 8);
  }
}

void Writer::sint(std::int64_t value) {
  if (value >= 0) {
    uint(static_cast<std::uint64_t>(value));
    return;
  }
  const auto bits = static_cast<std::uint64_t>(value);
  if (value >= -32) {
    out_.push_back(static_cast<std::uint8_t>(bits));  // negative fixint 0xe0..0xff
  } else if (value >= INT8_MIN) {
    out_.push_back(0xd0);
    put_be(bits, 1);
  } else if (value >= INT16_MIN) {
    out_.push_back(0xd1);
    put_be(bits, 2);
  } else if (value >= INT32_MIN) {
    out_.push_back(0xd2);
    put_be(bits, 4);
  } else {
    out_.push_back(0xd3);
    put_be(bits, 8);
  }
}

void Writer::float64(double value) {
  out_.push_back(0xcb);
  put_be(std::bit_cast<std::uint64_t>(value), 8);
}

void Writer::str(std::string_view text) {
  const std::size_t n = text.size();
  if (n < 32) {
    out_.push_back(static_cast<std::uint8_t>(0xa0 | n));
  } else if (n <= 0xff) {
    out_.push_back(0xd9);
    put_be(n, 1);
  } else if (n <= 0xffff) {
    out_.push_back(0xda);
    put_be(n, 2);
  } else {
    out_.push_back(0xdb);
    put_be(n, 4);
  }
  for (char c : text) out_.push_back(static_cast<std::uint8_t>(c));
}

void Writer::bin(std::span<const std::uint8_t> bytes) {
  const std::size_t n = bytes.size();
  if (n <= 0xff) {
    out_.push_back(0xc4);
    put_be(n, 1);
  } else if (n <= 0xffff) {
    out_.push_back(0xc5);
    put_be(n, 2);
  } else {
    out_.push_back(0xc6);
    put_be(n, 4);
  }
  out_.insert(out_.end(), bytes.begin(), bytes.end());
}

void Writer::array_header(std::size_t size) {
  if (size < 16) {
    out_.push_back(static_cast<std::uint8_t>(0x90 | size));
  } else if (size <= 0xffff) {
    out_.push_back(0xdc);
    put_be(size, 2);
  } else {
    out_.push_back(0xdd);
    put_be(size, 4);
  }
}

void Writer::map_header(std::size_t size) {
  if (size < 16) {
    out_.push_back(static_cast<std::uint8_t>(0x80 | size));
  } else if (size <= 0xffff) {
    out_.push_back(0xde);
    put_be(size, 2);
  } else {
    out_.push_back(0xdf);
    put_be(size, 4);
  }
}

}  // namespace omni::kvcache::msgpack
