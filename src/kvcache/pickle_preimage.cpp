// Pickle protocol 5 writer for exactly the Python values vLLM hashes: bytes, str, int, None and
// (nested) tuples, laid out as CPython's C pickler does (spec §1.6).
//
//   80 05 | 95 <u64 LE frame length> | <opcodes...> 2e
//
// Every str/bytes/non-empty tuple is followed by MEMOIZE (0x94); ints and None are not memoised.
// Limitation: CPython splits pickles larger than 64 KiB into several frames; block pre-images are
// a few KiB at most, so a single frame is written.
#include <cstdint>
#include <type_traits>

#include "omni/kvcache/preimage.hpp"

namespace omni::kvcache {
namespace {

enum Opcode : std::uint8_t {
  kProto = 0x80,
  kFrame = 0x95,
  kShortBinBytes = 0x43,
  kBinBytes = 0x42,
  kShortBinUnicode = 0x8c,
  kBinUnicode = 0x58,
  kMemoize = 0x94,
  kEmptyTuple = 0x29,
  kMark = 0x28,
  kTuple = 0x74,
  kTuple1 = 0x85,
  kBinInt1 = 0x4b,
  kBinInt2 = 0x4d,
  kBinInt = 0x4a,
  kLong1 = 0x8a,
  kNone = 0x4e,
  kStop = 0x2e,
};

constexpr std::size_t kFrameHeaderSize = 9;  // 0x95 + u64 length

class PickleWriter {
 public:
  explicit PickleWriter(std::vector<std::uint8_t>& out) : out_(out) {
    out_.clear();
    out_.push_back(kProto);
    out_.push_back(5);
    out_.push_back(kFrame);
    out_.resize(out_.size() + 8);  // frame length, patched by finish()
  }

  void finish() {
    out_.push_back(kStop);
    const std::uint64_t frame_len = out_.size() - 2 - kFrameHeaderSize;
    put_le_at(3, frame_len, 8);
  }

  void put_bytes(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < 256) {
      out_.push_back(kShortBinBytes);
      out_.push_back(static_cast<std::uint8_t>(bytes.size()));
    } else {
      out_.push_back(kBinBytes);
      put_le(bytes.size(), 4);
    }
    out_.insert(out_.end(), bytes.begin(), bytes.end());
    out_.push_back(kMemoize);
  }

  void put_str(std::string_view text) {
    if (text.size() < 256) {
      out_.push_back(kShortBinUnicode);
      out_.push_back(static_cast<std::uint8_t>(text.size()));
    } else {
      out_.push_back(kBinUnicode);
      put_le(text.size(), 4);
    }
    for (char c : text) out_.push_back(static_cast<std::uint8_t>(c));
    out_.push_back(kMemoize);
  }

  void put_int(std::int64_t value) {
    if (value >= 0 && value <= 0xff) {
      out_.push_back(kBinInt1);
      out_.push_back(static_cast<std::uint8_t>(value));
    } else if (value >= 0 && value <= 0xffff) {
      out_.push_back(kBinInt2);
      put_le(static_cast<std::uint64_t>(value), 2);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
      out_.push_back(kBinInt);
      put_le(static_cast<std::uint64_t>(value), 4);
    } else {
      put_long1(value);
    }
  }

  void put_none() { out_.push_back(kNone); }

  // Call before the elements of a tuple of `size` elements, then end_tuple(size) after them.
  void begin_tuple(std::size_t size) {
    if (size > 3) out_.push_back(kMark);
  }
  void end_tuple(std::size_t size) {
    if (size == 0) {
      out_.push_back(kEmptyTuple);
      return;  // the empty tuple is a singleton: CPython does not memoise it
    }
    out_.push_back(size > 3 ? static_cast<std::uint8_t>(kTuple)
                            : static_cast<std::uint8_t>(kTuple1 + size - 1));
    out_.push_back(kMemoize);
  }

 private:
  // LONG1: minimal little-endian two's complement, keeping a sign byte.
  void put_long1(std::int64_t value) {
    std::uint8_t le[8];
    const auto bits = static_cast<std::uint64_t>(value);
    for (std::size_t i = 0; i < 8; ++i) le[i] = static_cast<std::uint8_t>(bits >> (8 * i));
    std::size_t n = 8;
    while (n > 1) {
      const bool redundant_zero = le[n - 1] == 0x00 && (le[n - 2] & 0x80) == 0;
      const bool redundant_ones = le[n - 1] == 0xff && (le[n - 2] & 0x80) != 0;
      if (!redundant_zero && !redundant_ones) break;
      --n;
    }
    out_.push_back(kLong1);
    out_.push_back(static_cast<std::uint8_t>(n));
    out_.insert(out_.end(), le, le + n);
  }

  void put_le(std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
      out_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    }
  }
  void put_le_at(std::size_t pos, std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i) {
      out_[pos + i] = static_cast<std::uint8_t>(value >> (8 * i));
    }
  }

  std::vector<std::uint8_t>& out_;
};

void put_extra_key(PickleWriter& w, const ExtraKey& key) {
  std::visit(
      [&w](const auto& k) {
        using K = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<K, std::string>) {
          w.put_str(k);
        } else if constexpr (std::is_same_v<K, MmExtraKey>) {
          w.begin_tuple(2);
          w.put_str(k.identifier);
          w.put_int(k.offset);
          w.end_tuple(2);
        } else {
          w.put_bytes(k);
        }
      },
      key);
}

}  // namespace

void pickle_block_preimage(std::span<const std::uint8_t> parent,
                           std::span<const std::uint32_t> tokens, const ExtraKeys& extra,
                           std::vector<std::uint8_t>& out) {
  PickleWriter w(out);
  w.begin_tuple(3);
  w.put_bytes(parent);
  w.begin_tuple(tokens.size());
  for (std::uint32_t t : tokens) w.put_int(t);
  w.end_tuple(tokens.size());
  if (extra.empty()) {
    w.put_none();
  } else {
    w.begin_tuple(extra.items.size());
    for (const ExtraKey& key : extra.items) put_extra_key(w, key);
    w.end_tuple(extra.items.size());
  }
  w.end_tuple(3);
  w.finish();
}

void pickle_str_preimage(std::string_view text, std::vector<std::uint8_t>& out) {
  PickleWriter w(out);
  w.put_str(text);
  w.finish();
}

}  // namespace omni::kvcache
