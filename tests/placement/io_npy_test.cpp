// The .npy reader and the pattern writer: every supported dtype and format version, the
// malformed-input errors, and the fuzz corpus replayed (fuzz/placement_npy/corpus).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "omni/placement/io.hpp"

namespace omni::placement {
namespace {

namespace fs = std::filesystem;

std::span<const std::uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// A hand-built .npy: the header dict as given, in the given format version.
std::string make_npy(const std::string& dict, const std::string& data, int version = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const std::string header = dict + "\n";
  const std::size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (version >= 2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

template <class T>
std::string raw(std::initializer_list<T> values, bool big_endian = false) {
  std::string out;
  for (T v : values) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    if (big_endian) std::reverse(bytes, bytes + sizeof(T));
    out.append(bytes, sizeof(T));
  }
  return out;
}

std::vector<double> parsed(const std::string& file) {
  auto array = parse_npy(as_bytes(file));
  EXPECT_TRUE(array.ok()) << (array.ok() ? "" : array.error().to_string());
  return array.ok() ? array->values : std::vector<double>{};
}

TEST(IoNpy, DoublesRoundTripAsTwoDimensionalLoads) {
  const std::size_t shape[] = {2, 3};
  const double values[] = {1.5, 0, 3, 4, 5.25, 6};
  const std::string file = npy_from_doubles(shape, values);
  EXPECT_EQ(file.find('\n') + 1, file.size() - 6 * 8);  // the header ends right before the data
  EXPECT_EQ((file.size() - 6 * 8) % 64, 0u);            // data aligned as NumPy aligns it
  auto loads = loads_from_npy(as_bytes(file));
  ASSERT_TRUE(loads.ok()) << loads.error().to_string();
  EXPECT_EQ(loads->layers(), 2u);
  EXPECT_EQ(loads->experts(), 3u);
  EXPECT_EQ(loads->values(), std::vector<double>(std::begin(values), std::end(values)));
}

TEST(IoNpy, OneDimensionalArrayIsOneLayer) {
  auto loads =
      loads_from_npy(as_bytes(make_npy(dict("<i4", "(3,)"), raw<std::int32_t>({7, 8, 9}))));
  ASSERT_TRUE(loads.ok()) << loads.error().to_string();
  EXPECT_EQ(loads->layers(), 1u);
  EXPECT_EQ(loads->values(), (std::vector<double>{7, 8, 9}));
}

TEST(IoNpy, EveryLittleEndianDtypeConverts) {
  EXPECT_EQ(parsed(make_npy(dict("<f4", "(2,)"), raw<float>({1.5f, 2.0f}))),
            (std::vector<double>{1.5, 2}));
  EXPECT_EQ(parsed(make_npy(dict("<i8", "(2,)"), raw<std::int64_t>({-3, 1LL << 40}))),
            (std::vector<double>{-3, 1099511627776.0}));
  EXPECT_EQ(parsed(make_npy(dict("<i2", "(2,)"), raw<std::int16_t>({-2, 300}))),
            (std::vector<double>{-2, 300}));
  EXPECT_EQ(parsed(make_npy(dict("|i1", "(2,)"), raw<std::int8_t>({-128, 127}))),
            (std::vector<double>{-128, 127}));
  EXPECT_EQ(parsed(make_npy(dict("<u8", "(1,)"), raw<std::uint64_t>({1ULL << 63}))),
            (std::vector<double>{9223372036854775808.0}));
  EXPECT_EQ(parsed(make_npy(dict("<u4", "(1,)"), raw<std::uint32_t>({4000000000u}))),
            (std::vector<double>{4e9}));
  EXPECT_EQ(parsed(make_npy(dict("<u2", "(1,)"), raw<std::uint16_t>({65535}))),
            (std::vector<double>{65535}));
  EXPECT_EQ(parsed(make_npy(dict("|u1", "(2,)"), raw<std::uint8_t>({0, 255}))),
            (std::vector<double>{0, 255}));
  EXPECT_EQ(parsed(make_npy(dict("|b1", "(3,)"), raw<std::uint8_t>({0, 1, 2}))),
            (std::vector<double>{0, 1, 1}));
}

TEST(IoNpy, BigEndianDtypesConvert) {
  EXPECT_EQ(parsed(make_npy(dict(">f8", "(2,)"), raw<double>({2.5, -1}, true))),
            (std::vector<double>{2.5, -1}));
  EXPECT_EQ(parsed(make_npy(dict(">f4", "(1,)"), raw<float>({0.25f}, true))),
            (std::vector<double>{0.25}));
  EXPECT_EQ(parsed(make_npy(dict(">i4", "(2,)"), raw<std::int32_t>({-5, 70000}, true))),
            (std::vector<double>{-5, 70000}));
  EXPECT_EQ(parsed(make_npy(dict(">u2", "(1,)"), raw<std::uint16_t>({258}, true))),
            (std::vector<double>{258}));
}

TEST(IoNpy, FormatVersionsTwoAndThreeHaveFourByteHeaderLengths) {
  for (int version : {2, 3}) {
    auto loads =
        loads_from_npy(as_bytes(make_npy(dict("<f8", "(1, 2)"), raw<double>({1, 2}), version)));
    ASSERT_TRUE(loads.ok()) << version << ": " << loads.error().to_string();
    EXPECT_EQ(loads->values(), (std::vector<double>{1, 2}));
  }
  auto v4 = parse_npy(as_bytes(make_npy(dict("<f8", "(1,)"), raw<double>({1}), 4)));
  ASSERT_FALSE(v4.ok());
  EXPECT_EQ(v4.error().code, ErrorCode::kUnsupported);
}

TEST(IoNpy, HeaderKeysInAnyOrderWithDoubleQuotes) {
  const std::string d = "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<i4\"}";
  EXPECT_EQ(parsed(make_npy(d, raw<std::int32_t>({4, 5}))), (std::vector<double>{4, 5}));
}

TEST(IoNpy, FortranOrderAndUnknownDtypesAreUnsupported) {
  auto fortran = parse_npy(as_bytes(make_npy(dict("<f8", "(1, 2)", true), raw<double>({1, 2}))));
  ASSERT_FALSE(fortran.ok());
  EXPECT_EQ(fortran.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(fortran.error().message.find("fortran_order"), std::string::npos);
  for (const char* descr : {"<c16", "<U3", "<f2", "<M8", "xi4", "<i3"}) {
    auto r = parse_npy(as_bytes(make_npy(dict(descr, "(1,)"), std::string(8, '\0'))));
    ASSERT_FALSE(r.ok()) << descr;
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported) << descr;
  }
}

TEST(IoNpy, MalformedFilesAreErrorsNamingTheProblem) {
  struct Case {
    std::string file;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"hello", "magic"},
      {make_npy(dict("<f8", "(2,)"), raw<double>({1})), "header says 16"},
      {make_npy(dict("<f8", "(1,)"), raw<double>({1, 2})), "header says 8"},
      {make_npy("{'descr': '<f8', 'shape': (1,)}", raw<double>({1})), "lacks"},
      {make_npy("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (1,)}", raw<double>({1})),
       "neither"},
      {make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,)}", ""), "non-negative"},
      {make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': 1}", ""),
       "unexpected"},
      {make_npy("['<f8']", ""), "not a dict"},
      {make_npy(dict("<f8", "(1,1,1,1,1,1,1,1,1)"), raw<double>({1})), "8 dimensions"},
  };
  for (const Case& c : cases) {
    auto r = parse_npy(as_bytes(c.file));
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
  std::string past_end = make_npy(dict("<f8", "(1,)"), "");
  past_end[8] = '\xff';  // the header length now runs past the end
  EXPECT_FALSE(parse_npy(as_bytes(past_end)).ok());
}

TEST(IoNpy, HugeShapesAreRefusedBeforeAllocating) {
  auto r = parse_npy(as_bytes(make_npy(dict("<f8", "(1048576, 1048576)"), "")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTooLarge);
  auto overflow = parse_npy(as_bytes(make_npy(dict("<f8", "(99999999999999999999,)"), "")));
  EXPECT_FALSE(overflow.ok());
}

TEST(IoNpy, EveryTruncationOfAValidFileIsAnError) {
  const std::string file = make_npy(dict("<i4", "(2, 2)"), raw<std::int32_t>({1, 2, 3, 4}));
  ASSERT_TRUE(parse_npy(as_bytes(file)).ok());
  for (std::size_t n = 0; n < file.size(); ++n) {
    EXPECT_FALSE(parse_npy(as_bytes(file.substr(0, n))).ok()) << n;
  }
}

TEST(IoNpy, LoadsMustBeNonNegativeAndAtMostTwoDimensional) {
  auto negative =
      loads_from_npy(as_bytes(make_npy(dict("<i4", "(2,)"), raw<std::int32_t>({1, -1}))));
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, ErrorCode::kInvalidArgument);
  auto nan = loads_from_npy(as_bytes(make_npy(dict("<f8", "(1,)"), raw<double>({std::nan("")}))));
  EXPECT_FALSE(nan.ok());
  auto three_d = loads_from_npy(as_bytes(make_npy(dict("<f8", "(1, 1, 1)"), raw<double>({1}))));
  ASSERT_FALSE(three_d.ok());
  EXPECT_NE(three_d.error().message.find("3 dimensions"), std::string::npos);
  EXPECT_FALSE(loads_from_npy(as_bytes(make_npy(dict("<f8", "(0,)"), ""))).ok());
}

// Two devices, two layers, four experts; layer 1 has one redundant slot per device.
Placement small_placement() {
  Placement p;
  p.devices = 2;
  p.experts = 4;
  p.layers.push_back({2, {0, 3, 1, 2}});
  p.layers.push_back({3, {0, 1, 2, 0, 2, 3}});
  return p;
}

TEST(IoPattern, Int32PatternIsDevicesByLayersByExperts) {
  auto file = pattern_to_npy(small_placement());
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  auto array = parse_npy(as_bytes(*file));
  ASSERT_TRUE(array.ok()) << array.error().to_string();
  EXPECT_EQ(array->dtype, "<i4");
  EXPECT_EQ(array->shape, (std::vector<std::size_t>{2, 2, 4}));
  const std::vector<double> expected = {
      1, 0, 0, 1,  // device 0, layer 0: experts 0, 3
      1, 1, 1, 0,  // device 0, layer 1: experts 0, 1, 2
      0, 1, 1, 0,  // device 1, layer 0: experts 1, 2
      1, 0, 1, 1,  // device 1, layer 1: experts 0, 2, 3
  };
  EXPECT_EQ(array->values, expected);
}

TEST(IoPattern, RoundTripsWithSlotsInExpertOrder) {
  for (PatternDtype dtype : {PatternDtype::kInt32, PatternDtype::kBool}) {
    auto file = pattern_to_npy(small_placement(), dtype);
    ASSERT_TRUE(file.ok());
    auto array = parse_npy(as_bytes(*file));
    ASSERT_TRUE(array.ok());
    EXPECT_EQ(array->dtype, dtype == PatternDtype::kBool ? "|b1" : "<i4");
    auto back = placement_from_pattern(*array);
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(back->layers[0].phy2log, (std::vector<ExpertId>{0, 3, 1, 2}));
    EXPECT_EQ(back->layers[1].slots_per_device, 3u);
    EXPECT_EQ(back->layers[1].phy2log, (std::vector<ExpertId>{0, 1, 2, 0, 2, 3}));
  }
}

TEST(IoPattern, ColocatedCopiesCannotBeExpressed) {
  Placement p = small_placement();
  p.layers[1].phy2log = {0, 0, 1, 2, 3, 1};
  auto file = pattern_to_npy(p);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("twice"), std::string::npos);
}

TEST(IoPattern, UnevenOrNonBinaryPatternsAreRejected) {
  NpyArray uneven{{2, 1, 3}, {1, 1, 1, 0, 0, 1}, "<i4"};
  auto r = placement_from_pattern(uneven);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("device 1 holds 1"), std::string::npos);
  NpyArray two{{1, 1, 2}, {1, 2}, "<i4"};
  EXPECT_FALSE(placement_from_pattern(two).ok());
  NpyArray missing_expert{{1, 1, 2}, {1, 0}, "<i4"};
  EXPECT_FALSE(placement_from_pattern(missing_expert).ok());
  NpyArray flat{{2, 2}, {1, 1, 1, 1}, "<i4"};
  EXPECT_FALSE(placement_from_pattern(flat).ok());
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// valid_* seeds parse as loads; reject_* seeds are refused; the rest only must not crash.
TEST(IoNpyFuzzCorpus, EveryFileBehavesAsItsNameSays) {
  const fs::path dir = OMNI_PLACEMENT_NPY_CORPUS_DIR;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::size_t valid = 0;
  std::size_t rejected = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string bytes = read_bytes(entry.path());
    auto loads = loads_from_npy(as_bytes(bytes));
    if (name.rfind("valid_", 0) == 0) {
      ++valid;
      EXPECT_TRUE(loads.ok()) << name << ": " << (loads.ok() ? "" : loads.error().message);
    } else if (name.rfind("reject_", 0) == 0) {
      ++rejected;
      EXPECT_FALSE(loads.ok()) << name;
    }
  }
  EXPECT_GE(valid, 4u);
  EXPECT_GE(rejected, 4u);
}

}  // namespace
}  // namespace omni::placement
