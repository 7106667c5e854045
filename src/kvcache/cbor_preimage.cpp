// Canonical CBOR (RFC 8949 preferred serialisation, as cbor2.dumps(canonical=True) writes it) for
// the values vLLM hashes: bytes, text, ints, None and tuples (= arrays). None of these shapes is
// affected by canonical map ordering, so a plain shortest-form writer is byte-exact.
#include <type_traits>

#include "omni/kvcache/preimage.hpp"

namespace omni::kvcache {
namespace {

enum MajorType : std::uint8_t {
  kUnsigned = 0,
  kNegative = 1,
  kByteString = 2,
  kTextString = 3,
  kArray = 4,
};
constexpr std::uint8_t kNull = 0xf6;

class CborWriter {
 public:
  explicit CborWriter(std::vector<std::uint8_t>& out) : out_(out) { out_.clear(); }

  // The initial byte plus the shortest argument encoding (1, 2, 4 or 8 bytes).
  void put_head(MajorType major, std::uint64_t arg) {
    const auto base = static_cast<std::uint8_t>(major << 5);
    if (arg < 24) {
      out_.push_back(static_cast<std::uint8_t>(base | arg));
    } else if (arg <= 0xff) {
      out_.push_back(static_cast<std::uint8_t>(base | 24));
      put_be(arg, 1);
    } else if (arg <= 0xffff) {
      out_.push_back(static_cast<std::uint8_t>(base | 25));
      put_be(arg, 2);
    } else if (arg <= 0xffffffffULL) {
      out_.push_back(static_cast<std::uint8_t>(base | 26));
      put_be(arg, 4);
    } else {
      out_.push_back(static_cast<std::uint8_t>(base | 27));
      put_be(arg, 8);
    }
  }

  void put_int(std::int64_t value) {
    if (value >= 0) {
      put_head(kUnsigned, static_cast<std::uint64_t>(value));
    } else {
      // -1 - value, computed without overflow for INT64_MIN.
      put_head(kNegative, ~static_cast<std::uint64_t>(value));
    }
  }
  void put_bytes(std::span<const std::uint8_t> bytes) {
    put_head(kByteString, bytes.size());
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  void put_text(std::string_view text) {
    put_head(kTextString, text.size());
    for (char c : text) out_.push_back(static_cast<std::uint8_t>(c));
  }
  void put_null() { out_.push_back(kNull); }

 private:
  void put_be(std::uint64_t value, std::size_t width) {
    for (std::size_t i = width; i > 0; --i) {
      out_.push_back(static_cast<std::uint8_t>(value >> (8 * (i - 1))));
    }
  }

  std::vector<std::uint8_t>& out_;
};

void put_extra_key(CborWriter& w, const ExtraKey& key) {
  std::visit(
      [&w](const auto& k) {
        using K = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<K, std::string>) {
          w.put_text(k);
        } else if constexpr (std::is_same_v<K, MmExtraKey>) {
          w.put_head(kArray, 2);
          w.put_text(k.identifier);
          w.put_int(k.offset);
        } else {
          w.put_bytes(k);
        }
      },
      key);
}

}  // namespace

void cbor_block_preimage(std::span<const std::uint8_t> parent,
                         std::span<const std::uint32_t> tokens, const ExtraKeys& extra,
                         std::vector<std::uint8_t>& out) {
  CborWriter w(out);
  w.put_head(kArray, 3);
  w.put_bytes(parent);
  w.put_head(kArray, tokens.size());
  for (std::uint32_t t : tokens) w.put_head(kUnsigned, t);
  if (extra.empty()) {
    w.put_null();
  } else {
    w.put_head(kArray, extra.items.size());
    for (const ExtraKey& key : extra.items) put_extra_key(w, key);
  }
}

void cbor_str_preimage(std::string_view text, std::vector<std::uint8_t>& out) {
  CborWriter w(out);
  w.put_text(text);
}

}  // namespace omni::kvcache
