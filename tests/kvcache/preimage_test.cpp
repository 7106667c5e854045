// Pre-image bytes for value shapes the golden vectors do not reach (expected bytes produced by
// CPython 3.11 pickle.dumps(protocol=5) and by hand from RFC 8949).
#include <gtest/gtest.h>

#include "golden_files.hpp"
#include "omni/kvcache/preimage.hpp"

namespace omni::kvcache {
namespace {

using testing::to_hex;

std::string pickled(std::vector<std::uint8_t> parent, std::vector<std::uint32_t> tokens,
                    const ExtraKeys& extra) {
  std::vector<std::uint8_t> out;
  pickle_block_preimage(parent, tokens, extra, out);
  return to_hex(out);
}

std::string cbor(std::vector<std::uint8_t> parent, std::vector<std::uint32_t> tokens,
                 const ExtraKeys& extra) {
  std::vector<std::uint8_t> out;
  cbor_block_preimage(parent, tokens, extra, out);
  return to_hex(out);
}

TEST(PicklePreimage, EveryIntegerWidth) {
  EXPECT_EQ(pickled({1, 2}, {255, 256, 65535, 65536, 2147483647u, 2147483648u, 4294967295u}, {}),
            "8005952c000000000000004302010294284bff4d00014dffff4a000001004affffff7f8a050000008000"
            "8a05ffffffff0074944e87942e");
}

TEST(PicklePreimage, SmallTuplesUseTupleNOpcodes) {
  ExtraKeys salt;
  salt.items.emplace_back(std::string("s"));
  EXPECT_EQ(pickled({0xaa}, {7}, salt), "80059511000000000000004301aa944b0785948c017394859487942e");
  ExtraKeys mm;
  mm.items.emplace_back(MmExtraKey{"id", -(std::int64_t{1} << 40)});
  EXPECT_EQ(pickled({0xaa}, {7, 8, 9}, mm),
            "80059520000000000000004301aa944b074b084b0987948c026964948a060000000000ff869485948794"
            "2e");
}

TEST(PicklePreimage, EmptyTupleLongStrNegativeOffsetAndBytes) {
  ExtraKeys keys;
  keys.items.emplace_back(std::string(300, 'x'));
  keys.items.emplace_back(MmExtraKey{"id", -5});
  keys.items.emplace_back(std::vector<std::uint8_t>{0, 0, 0});
  std::string want = "8005954e010000000000004301aa9429582c010000";
  for (int i = 0; i < 300; ++i) want += "78";
  want += "948c026964944afbffffff8694430300000094879487942e";
  EXPECT_EQ(pickled({0xaa}, {}, keys), want);
}

TEST(PicklePreimage, NoneHashSeedString) {
  std::vector<std::uint8_t> out;
  pickle_str_preimage("0", out);
  EXPECT_EQ(to_hex(out), "80059505000000000000008c0130942e");
}

TEST(CborPreimage, EveryIntegerWidth) {
  EXPECT_EQ(cbor({1, 2}, {23, 24, 255, 256, 65535, 65536, 4294967295u}, {}),
            "8342010287171818"
            "18ff190100"
            "19ffff1a00010000"
            "1affffffff"
            "f6");
}

TEST(CborPreimage, ExtraKeysAndLongArrays) {
  ExtraKeys keys;
  keys.items.emplace_back(std::string("s"));
  keys.items.emplace_back(MmExtraKey{"id", -5});
  keys.items.emplace_back(std::vector<std::uint8_t>{0, 0, 0});
  EXPECT_EQ(cbor({0xaa}, {}, keys),
            "8341aa808361738262696424"
            "43000000");
  ExtraKeys far;
  far.items.emplace_back(MmExtraKey{"id", -(std::int64_t{1} << 40)});
  EXPECT_EQ(cbor({0xaa}, {}, far), "8341aa8081826269643b000000ffffffffff");
  // 24 tokens need the one-byte array length form.
  const std::vector<std::uint32_t> tokens(24, 1);
  std::string want = "8341aa9818";
  for (int i = 0; i < 24; ++i) want += "01";
  want += "f6";
  EXPECT_EQ(cbor({0xaa}, tokens, {}), want);
}

TEST(CborPreimage, NoneHashSeedString) {
  std::vector<std::uint8_t> out;
  cbor_str_preimage("0", out);
  EXPECT_EQ(to_hex(out), "6130");
}

TEST(Preimage, BufferIsReplacedNotAppended) {
  std::vector<std::uint8_t> out{9, 9, 9};
  pickle_str_preimage("0", out);
  EXPECT_EQ(out.size(), 16u);
  cbor_str_preimage("0", out);
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace omni::kvcache
