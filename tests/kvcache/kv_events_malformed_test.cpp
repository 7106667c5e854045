// The decoder never trusts its input: malformed payloads are errors, never crashes.
#include <gtest/gtest.h>

#include "golden_files.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {
namespace {

using testing::from_hex;

constexpr const char* kReferenceBatchHex =
    "93cb41da556e40200000929cab426c6f636b53746f72656492cf6ec84ae048faaaa6cfafe70601eeca92c8c0dc"
    "0020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f10c0a3475055c092c0c000"
    "ae66756c6c5f617474656e74696f6ec094ac426c6f636b52656d6f76656491cfb2f6500e761427dda347505500"
    "00";

ErrorCode decode_error(const std::string& hex, const DecodeLimits& limits = {}) {
  const auto payload = from_hex(hex);
  auto decoded = decode_batch(payload, limits);
  EXPECT_FALSE(decoded.ok()) << hex;
  return decoded.ok() ? ErrorCode::kInternal : decoded.error().code;
}

TEST(KvEventsMalformed, EveryTruncationIsAnError) {
  const auto payload = from_hex(kReferenceBatchHex);
  for (std::size_t n = 0; n < payload.size(); ++n) {
    auto decoded = decode_batch(std::span(payload).first(n));
    ASSERT_FALSE(decoded.ok()) << "prefix of " << n << " bytes";
    EXPECT_EQ(decoded.error().code, ErrorCode::kProtocol);
  }
}

TEST(KvEventsMalformed, EverySingleByteCorruptionIsHandled) {
  // Not every corruption is invalid, but each must decode or fail cleanly (ASan checks the rest).
  const auto payload = from_hex(kReferenceBatchHex);
  std::size_t failures = 0;
  for (std::size_t i = 0; i < payload.size(); ++i) {
    for (int value : {0x00, 0x7f, 0xc1, 0xcf, 0xdd, 0xdf, 0xff}) {
      auto corrupt = payload;
      corrupt[i] = static_cast<std::uint8_t>(value);
      if (!decode_batch(corrupt).ok()) ++failures;
    }
  }
  EXPECT_GT(failures, payload.size());
}

TEST(KvEventsMalformed, TrailingBytes) {
  EXPECT_EQ(decode_error("93cb00000000000000009000"
                         "00"),
            ErrorCode::kProtocol);
}

TEST(KvEventsMalformed, WrongTypes) {
  EXPECT_EQ(decode_error("a3616263"), ErrorCode::kProtocol);                      // not an array
  EXPECT_EQ(decode_error("91cb0000000000000000"), ErrorCode::kProtocol);          // 1 field
  EXPECT_EQ(decode_error("93a17890c0"), ErrorCode::kProtocol);                    // ts is a str
  EXPECT_EQ(decode_error("93cb0000000000000000c0c0"), ErrorCode::kProtocol);      // events nil
  EXPECT_EQ(decode_error("93cb00000000000000009101c0"), ErrorCode::kProtocol);    // event is an int
  EXPECT_EQ(decode_error("93cb0000000000000000919001c0"), ErrorCode::kProtocol);  // empty event
  EXPECT_EQ(decode_error("93cb000000000000000091910101c0"), ErrorCode::kProtocol);  // int tag
  EXPECT_EQ(decode_error("93cb0000000000000000a0"
                         "9000"),
            ErrorCode::kProtocol);
  // BlockRemoved whose hash is a str, and one with a negative... float hash.
  EXPECT_EQ(decode_error("93cb00000000000000009192ac426c6f636b52656d6f76656491a178c0"),
            ErrorCode::kProtocol);
  EXPECT_EQ(
      decode_error("93cb00000000000000009192ac426c6f636b52656d6f76656491cb0000000000000000c0"),
      ErrorCode::kProtocol);
  // BlockStored missing block_size, and one with a token id above 2^32 - 1.
  EXPECT_EQ(decode_error("93cb00000000000000009194ab426c6f636b53746f7265649101c09101c0"),
            ErrorCode::kProtocol);
  EXPECT_EQ(
      decode_error("93cb00000000000000009195ab426c6f636b53746f7265649101c091cf0000000100000000"
                   "10c0"),
      ErrorCode::kProtocol);
  // dp rank is a str; a map event without "type"; a map event with an int key.
  EXPECT_EQ(decode_error("93cb000000000000000090a178"), ErrorCode::kProtocol);
  EXPECT_EQ(decode_error("93cb00000000000000009181a178c0c0"), ErrorCode::kProtocol);
  EXPECT_EQ(decode_error("93cb0000000000000000918101c0c0"), ErrorCode::kProtocol);
  EXPECT_EQ(decode_error("93cb0000000000000000c1"), ErrorCode::kProtocol);  // reserved byte
}

TEST(KvEventsMalformed, HugeDeclaredLengthsAreRejectedBeforeAllocating) {
  EXPECT_EQ(decode_error("ddffffffff"), ErrorCode::kProtocol);                      // array32
  EXPECT_EQ(decode_error("93cb0000000000000000dfffffffff"), ErrorCode::kProtocol);  // map32
  EXPECT_EQ(decode_error("93cb0000000000000000ddffffffff00"), ErrorCode::kProtocol);
  EXPECT_EQ(decode_error("93cb000000000000000091dbffffffff41"), ErrorCode::kProtocol);  // str32
  // A BlockStored whose token array claims 2^32 - 1 elements.
  EXPECT_EQ(decode_error("93cb00000000000000009195ab426c6f636b53746f7265649101c0ddffffffff10c0"),
            ErrorCode::kProtocol);
  // bin32 hash of 4 GiB; ext32 of 4 GiB inside an unknown event.
  EXPECT_EQ(decode_error("93cb00000000000000009192ac426c6f636b52656d6f76656491c6ffffffff00c0"),
            ErrorCode::kProtocol);
  EXPECT_EQ(decode_error("93cb00000000000000009192a14ec9ffffffff0100c0"), ErrorCode::kProtocol);
}

TEST(KvEventsMalformed, DeepNestingInsideAnUnknownEvent) {
  // ["X", [[[[...]]]]] nested 10000 levels: the skip depth limit stops it.
  std::string hex = "93cb00000000000000009192a158";
  for (int i = 0; i < 10000; ++i) hex += "91";
  hex += "c0c0";
  EXPECT_EQ(decode_error(hex), ErrorCode::kProtocol);
  // Within the limit the same shape is skipped.
  std::string shallow = "93cb00000000000000009192a158";
  for (int i = 0; i < 8; ++i) shallow += "91";
  shallow += "c0c0";
  auto decoded = decode_batch(from_hex(shallow));
  ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
  EXPECT_EQ(decoded->skipped_events, 1u);
}

TEST(KvEventsMalformed, Limits) {
  DecodeLimits limits;
  limits.max_events = 1;
  EXPECT_EQ(decode_error("93cb00000000000000009291a158"
                         "91a158"
                         "c0",
                         limits),
            ErrorCode::kTooLarge);
  limits = DecodeLimits{};
  limits.max_payload_bytes = 4;
  EXPECT_EQ(decode_error("93cb00000000000000009000", limits), ErrorCode::kTooLarge);
}

}  // namespace
}  // namespace omni::kvcache
