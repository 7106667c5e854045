// The .npy reader: a bounds-checked parse of untrusted bytes (fuzzed by fuzz/placement_npy).
//
//   offset 0   "\x93NUMPY"  major minor
//          8   header length: uint16 LE (1.0) or uint32 LE (2.0, 3.0)
//     10 / 12  header: a Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (L,
//     E), }
//              padded with spaces and '\n'
//        data  prod(shape) items of the dtype, C order
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "omni/placement/io.hpp"

namespace omni::placement {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, "npy: " + std::move(message));
}

// A cursor over the header's dict literal.
class HeaderScanner {
 public:
  explicit HeaderScanner(std::string_view text) : text_(text) {}

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool consume(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consume_word(std::string_view word) {
    skip_spaces();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  std::optional<std::string> quoted() {
    skip_spaces();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }
  std::optional<std::size_t> integer() {
    skip_spaces();
    std::size_t value = 0;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::size_t>(text_[pos_] - '0');
      if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) return std::nullopt;
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) return std::nullopt;
    // Python 2 era files may write long integers as "3L".
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    return value;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

Result<std::vector<std::size_t>> parse_shape(HeaderScanner& scan) {
  if (!scan.consume('(')) return invalid("'shape' is not a tuple");
  std::vector<std::size_t> shape;
  while (!scan.consume(')')) {
    if (shape.size() >= kMaxNpyDims) return invalid("more than 8 dimensions");
    auto dim = scan.integer();
    if (!dim) return invalid("'shape' holds a value that is not a non-negative integer");
    shape.push_back(*dim);
    if (!scan.consume(',')) {
      if (!scan.consume(')')) return invalid("'shape' tuple is malformed");
      break;
    }
  }
  return shape;
}

Status parse_entry(HeaderScanner& scan, Header& header) {
  auto key = scan.quoted();
  if (!key) return invalid("header key is not a quoted string");
  if (!scan.consume(':')) return invalid("missing ':' after '" + *key + "'");
  if (*key == "descr") {
    auto descr = scan.quoted();
    if (!descr) return invalid("'descr' is not a string (structured dtypes are unsupported)");
    header.descr = *descr;
    header.has_descr = true;
  } else if (*key == "fortran_order") {
    if (scan.consume_word("True")) {
      header.fortran_order = true;
    } else if (!scan.consume_word("False")) {
      return invalid("'fortran_order' is neither True nor False");
    }
    header.has_order = true;
  } else if (*key == "shape") {
    auto shape = parse_shape(scan);
    if (!shape) return shape.error();
    header.shape = std::move(*shape);
    header.has_shape = true;
  } else {
    return invalid("unexpected header key '" + *key + "'");
  }
  return ok_status();
}

Result<Header> parse_header(std::string_view text) {
  HeaderScanner scan(text);
  Header header;
  if (!scan.consume('{')) return invalid("header is not a dict");
  while (!scan.consume('}')) {
    if (Status s = parse_entry(scan, header); !s) return s.error();
    if (!scan.consume(',')) {
      if (!scan.consume('}')) return invalid("header dict is malformed");
      break;
    }
  }
  if (!header.has_descr || !header.has_order || !header.has_shape) {
    return invalid("header lacks one of 'descr', 'fortran_order', 'shape'");
  }
  return header;
}

struct Dtype {
  char kind = 'f';  // f, i, u, b
  std::size_t size = 8;
  bool big_endian = false;
};

Result<Dtype> parse_dtype(std::string_view descr) {
  if (descr.size() != 3 && descr.size() != 2) {
    return make_error(ErrorCode::kUnsupported,
                      "npy: unsupported dtype '" + std::string(descr) + "'");
  }
  Dtype d;
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return make_error(ErrorCode::kUnsupported,
                      "npy: unsupported dtype '" + std::string(descr) + "'");
  }
  d.big_endian = order == '>';
  d.kind = descr[1];
  const std::string_view size = descr.substr(2);
  d.size = size.empty() ? 0 : static_cast<std::size_t>(size[0] - '0');
  const bool known = (d.kind == 'f' && (d.size == 4 || d.size == 8)) ||
                     ((d.kind == 'i' || d.kind == 'u') &&
                      (d.size == 1 || d.size == 2 || d.size == 4 || d.size == 8)) ||
                     (d.kind == 'b' && d.size == 1);
  if (!known) {
    return make_error(ErrorCode::kUnsupported,
                      "npy: unsupported dtype '" + std::string(descr) +
                          "' (expected one of f8 f4 i8 i4 i2 i1 u8 u4 u2 u1 b1)");
  }
  return d;
}

// Reads one item as an unsigned integer of d.size bytes in the file's byte order.
std::uint64_t load_bits(const std::uint8_t* p, const Dtype& d) {
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < d.size; ++i) {
    const std::size_t shift = d.big_endian ? (d.size - 1 - i) : i;
    bits |= static_cast<std::uint64_t>(p[i]) << (8 * shift);
  }
  return bits;
}

double item_to_double(const std::uint8_t* p, const Dtype& d) {
  std::uint64_t bits = load_bits(p, d);
  switch (d.kind) {
    case 'f':
      if (d.size == 4)
        return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
      return std::bit_cast<double>(bits);
    case 'u': return static_cast<double>(bits);
    case 'b': return bits != 0 ? 1.0 : 0.0;
    default: {  // 'i': sign-extend from d.size bytes
      const unsigned width = static_cast<unsigned>(8 * d.size);
      if (width < 64 && (bits >> (width - 1)) != 0) bits |= ~std::uint64_t{0} << width;
      return static_cast<double>(static_cast<std::int64_t>(bits));
    }
  }
}

Result<std::size_t> element_count(const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (std::size_t dim : shape) {
    if (dim != 0 && count > kMaxNpyElements / dim) {
      return make_error(ErrorCode::kTooLarge, "npy: more than 2^26 elements");
    }
    count *= dim;
  }
  if (count > kMaxNpyElements)
    return make_error(ErrorCode::kTooLarge, "npy: more than 2^26 elements");
  return count;
}

// The header's text and the offset where the data starts.
Result<std::pair<std::string_view, std::size_t>> split_header(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    return invalid("not a .npy file (no \\x93NUMPY magic)");
  }
  const std::uint8_t major = bytes[6];
  std::size_t header_len = 0;
  std::size_t prefix = 0;
  if (major == 1) {
    header_len = static_cast<std::size_t>(bytes[8]) | static_cast<std::size_t>(bytes[9]) << 8;
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid("truncated header length");
    for (std::size_t i = 0; i < 4; ++i)
      header_len |= static_cast<std::size_t>(bytes[8 + i]) << (8 * i);
    prefix = 12;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "npy: format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (header_len > bytes.size() - prefix) return invalid("header runs past the end of the file");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix), header_len);
  return std::pair{text, prefix + header_len};
}

}  // namespace

Result<NpyArray> parse_npy(std::span<const std::uint8_t> bytes) {
  auto split = split_header(bytes);
  if (!split) return split.error();
  auto header = parse_header(split->first);
  if (!header) return header.error();
  if (header->fortran_order) {
    return make_error(ErrorCode::kUnsupported,
                      "npy: fortran_order True (write the array in C order)");
  }
  auto dtype = parse_dtype(header->descr);
  if (!dtype) return dtype.error();
  auto count = element_count(header->shape);
  if (!count) return count.error();
  const std::size_t data_bytes = *count * dtype->size;
  const std::size_t available = bytes.size() - split->second;
  if (available != data_bytes) {
    return invalid("data holds " + std::to_string(available) + " bytes, the header says " +
                   std::to_string(data_bytes));
  }
  NpyArray array;
  array.shape = std::move(header->shape);
  array.dtype = std::move(header->descr);
  array.values.resize(*count);
  const std::uint8_t* data = bytes.data() + split->second;
  for (std::size_t i = 0; i < *count; ++i)
    array.values[i] = item_to_double(data + i * dtype->size, *dtype);
  return array;
}

}  // namespace omni::placement
