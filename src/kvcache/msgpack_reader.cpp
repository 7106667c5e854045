#include "msgpack_reader.hpp"

#include <bit>
#include <string>

namespace omni::kvcache::msgpack {
namespace {

Error protocol_error(std::string message) {
  return make_error(ErrorCode::kProtocol, "msgpack: " + std::move(message));
}

Result<Type> type_of(std::uint8_t b) {
  if (b <= 0x7f || b >= 0xe0) return Type::kInt;  // positive / negative fixint
  if (b >= 0x80 && b <= 0x8f) return Type::kMap;
  if (b >= 0x90 && b <= 0x9f) return Type::kArray;
  if (b >= 0xa0 && b <= 0xbf) return Type::kStr;
  switch (b) {
    case 0xc0: return Type::kNil;
    case 0xc2:
    case 0xc3: return Type::kBool;
    case 0xc4:
    case 0xc5:
    case 0xc6: return Type::kBin;
    case 0xc7:
    case 0xc8:
    case 0xc9: return Type::kExt;
    case 0xca:
    case 0xcb: return Type::kFloat;
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: return Type::kInt;
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: return Type::kInt;
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8: return Type::kExt;
    case 0xd9:
    case 0xda:
    case 0xdb: return Type::kStr;
    case 0xdc:
    case 0xdd: return Type::kArray;
    case 0xde:
    case 0xdf: return Type::kMap;
    default: return protocol_error("reserved byte 0xc1");
  }
}

}  // namespace

Result<std::span<const std::uint8_t>> Reader::take(std::size_t n) {
  if (n > remaining()) {
    return protocol_error("truncated: need " + std::to_string(n) + " bytes at offset " +
                          std::to_string(pos_) + ", " + std::to_string(remaining()) + " left");
  }
  auto bytes = data_.subspan(pos_, n);
  pos_ += n;
  return bytes;
}

Result<std::uint64_t> Reader::take_be(std::size_t width) {
  auto bytes = take(width);
  if (!bytes.ok()) return std::move(bytes).error();
  std::uint64_t value = 0;
  for (std::uint8_t b : *bytes) value = (value << 8) | b;
  return value;
}

Result<Type> Reader::peek() const {
  if (at_end()) return protocol_error("truncated: expected a value at the end of input");
  return type_of(data_[pos_]);
}

bool Reader::try_nil() {
  if (!at_end() && data_[pos_] == 0xc0) {
    ++pos_;
    return true;
  }
  return false;
}

Result<bool> Reader::read_bool() {
  if (at_end()) return protocol_error("truncated: expected a bool");
  const std::uint8_t b = data_[pos_];
  if (b != 0xc2 && b != 0xc3) return protocol_error("expected a bool");
  ++pos_;
  return b == 0xc3;
}

Result<std::uint64_t> Reader::read_uint() {
  if (!at_end() && data_[pos_] == 0xcf) {  // may exceed INT64_MAX: read it unsigned
    ++pos_;
    return take_be(8);
  }
  auto value = read_int();
  if (!value.ok()) return std::move(value).error();
  if (*value < 0) return protocol_error("expected a non-negative integer");
  return static_cast<std::uint64_t>(*value);
}

Result<std::int64_t> Reader::read_int() {
  if (at_end()) return protocol_error("truncated: expected an integer");
  const std::uint8_t b = data_[pos_];
  if (b <= 0x7f) {
    ++pos_;
    return static_cast<std::int64_t>(b);
  }
  if (b >= 0xe0) {
    ++pos_;
    return static_cast<std::int64_t>(static_cast<std::int8_t>(b));
  }
  std::size_t width = 0;
  bool is_signed = false;
  switch (b) {
    case 0xcc: width = 1; break;
    case 0xcd: width = 2; break;
    case 0xce: width = 4; break;
    case 0xcf: width = 8; break;
    case 0xd0:
      width = 1;
      is_signed = true;
      break;
    case 0xd1:
      width = 2;
      is_signed = true;
      break;
    case 0xd2:
      width = 4;
      is_signed = true;
      break;
    case 0xd3:
      width = 8;
      is_signed = true;
      break;
    default: return protocol_error("expected an integer at offset " + std::to_string(pos_));
  }
  if (b == 0xcf && remaining() >= 9 && data_[pos_ + 1] >= 0x80) {
    return protocol_error("integer above INT64_MAX");
  }
  ++pos_;
  auto raw = take_be(width);
  if (!raw.ok()) return std::move(raw).error();
  if (!is_signed) return static_cast<std::int64_t>(*raw);
  // Sign-extend the big-endian two's complement value.
  const unsigned shift = static_cast<unsigned>(64 - 8 * width);
  return static_cast<std::int64_t>(*raw << shift) >> shift;
}

Result<double> Reader::read_number() {
  if (at_end()) return protocol_error("truncated: expected a number");
  const std::uint8_t b = data_[pos_];
  if (b == 0xcb) {
    ++pos_;
    auto bits = take_be(8);
    if (!bits.ok()) return std::move(bits).error();
    return std::bit_cast<double>(*bits);
  }
  if (b == 0xca) {
    ++pos_;
    auto bits = take_be(4);
    if (!bits.ok()) return std::move(bits).error();
    return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(*bits)));
  }
  if (b == 0xcf) {
    auto value = read_uint();
    if (!value.ok()) return std::move(value).error();
    return static_cast<double>(*value);
  }
  auto value = read_int();
  if (!value.ok()) return std::move(value).error();
  return static_cast<double>(*value);
}

Result<std::size_t> Reader::read_length(std::uint8_t fix_base, std::uint8_t fix_mask,
                                        std::uint8_t op8, std::uint8_t op16, std::uint8_t op32,
                                        const char* what) {
  if (at_end()) return protocol_error(std::string("truncated: expected ") + what);
  const std::uint8_t b = data_[pos_];
  std::size_t width = 0;
  if (fix_mask != 0 && (b & static_cast<std::uint8_t>(~fix_mask)) == fix_base) {
    ++pos_;
    return static_cast<std::size_t>(b & fix_mask);
  }
  if (op8 != 0 && b == op8) {
    width = 1;
  } else if (b == op16) {
    width = 2;
  } else if (b == op32) {
    width = 4;
  } else {
    return protocol_error(std::string("expected ") + what + " at offset " + std::to_string(pos_));
  }
  ++pos_;
  auto length = take_be(width);
  if (!length.ok()) return std::move(length).error();
  return static_cast<std::size_t>(*length);
}

Result<std::string_view> Reader::read_str() {
  auto length = read_length(0xa0, 0x1f, 0xd9, 0xda, 0xdb, "a string");
  if (!length.ok()) return std::move(length).error();
  auto bytes = take(*length);
  if (!bytes.ok()) return std::move(bytes).error();
  return std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

Result<std::span<const std::uint8_t>> Reader::read_bin() {
  auto length = read_length(0, 0, 0xc4, 0xc5, 0xc6, "bytes");
  if (!length.ok()) return std::move(length).error();
  return take(*length);
}

Result<std::size_t> Reader::read_array_header() {
  auto count = read_length(0x90, 0x0f, 0, 0xdc, 0xdd, "an array");
  if (!count.ok()) return count;
  if (*count > remaining()) return protocol_error("array length exceeds the input");
  return count;
}

Result<std::size_t> Reader::read_map_header() {
  auto count = read_length(0x80, 0x0f, 0, 0xde, 0xdf, "a map");
  if (!count.ok()) return count;
  if (*count > remaining() / 2) return protocol_error("map length exceeds the input");
  return count;
}

Status Reader::skip_at_depth(std::size_t depth) {
  if (depth >= max_depth_)
    return protocol_error("nesting deeper than " + std::to_string(max_depth_));
  auto type = peek();
  if (!type.ok()) return std::move(type).error();
  switch (*type) {
    case Type::kNil: ++pos_; return ok_status();
    case Type::kBool: return read_bool().ok() ? ok_status() : protocol_error("bad bool");
    case Type::kInt: {
      if (data_[pos_] == 0xcf) {
        auto v = read_uint();
        return v.ok() ? ok_status() : Status(std::move(v).error());
      }
      auto v = read_int();
      return v.ok() ? ok_status() : Status(std::move(v).error());
    }
    case Type::kFloat: {
      auto v = read_number();
      return v.ok() ? ok_status() : Status(std::move(v).error());
    }
    case Type::kStr: {
      auto v = read_str();
      return v.ok() ? ok_status() : Status(std::move(v).error());
    }
    case Type::kBin: {
      auto v = read_bin();
      return v.ok() ? ok_status() : Status(std::move(v).error());
    }
    case Type::kExt: return skip_ext();
    case Type::kArray:
    case Type::kMap: break;
  }
  const bool is_map = *type == Type::kMap;
  auto count = is_map ? read_map_header() : read_array_header();
  if (!count.ok()) return std::move(count).error();
  const std::size_t values = is_map ? 2 * *count : *count;
  for (std::size_t i = 0; i < values; ++i) {
    Status status = skip_at_depth(depth + 1);
    if (!status.ok()) return status;
  }
  return ok_status();
}

Status Reader::skip_ext() {
  const std::uint8_t b = data_[pos_++];
  std::size_t payload = 0;
  if (b >= 0xd4 && b <= 0xd8) {
    payload = std::size_t{1} << (b - 0xd4);  // fixext 1, 2, 4, 8, 16
  } else {
    auto length = take_be(b == 0xc7 ? 1 : b == 0xc8 ? 2 : 4);
    if (!length.ok()) return std::move(length).error();
    payload = static_cast<std::size_t>(*length);
  }
  if (payload > remaining() || remaining() - payload < 1) return protocol_error("truncated ext");
  pos_ += 1 + payload;  // the type byte, then the payload
  return ok_status();
}

}  // namespace omni::kvcache::msgpack
