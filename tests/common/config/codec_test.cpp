// Scalar text conversions: every accepted form, every rejected form and its message.
#include "omni/config/codec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace omni::config {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(ConfigCodec, BoolAcceptsCommonSpellings) {
  for (const char* yes : {"true", "True", "yes", "on", "1"}) EXPECT_TRUE(*parse_bool(yes)) << yes;
  for (const char* no : {"false", "FALSE", "no", "off", "0"}) EXPECT_FALSE(*parse_bool(no)) << no;
  auto bad = parse_bool("maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "expected a boolean (true/false), got 'maybe'");
}

TEST(ConfigCodec, IntegersAreExactAndNeverNarrowedSilently) {
  IntCodec<std::uint16_t> u16;
  EXPECT_EQ(*u16.parse("65535"), 65535);
  EXPECT_EQ(*u16.parse("+7"), 7);
  auto wide = u16.parse("70000");
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.error().message, "value 70000 does not fit in uint16 (0..65535)");
  EXPECT_EQ(u16.parse("-1").error().message, "expected a non-negative integer, got '-1'");

  IntCodec<std::int8_t> i8;
  EXPECT_EQ(*i8.parse("-128"), -128);
  EXPECT_EQ(i8.parse("128").error().message, "value 128 does not fit in int8 (-128..127)");

  IntCodec<std::int64_t> i64;
  EXPECT_THAT(i64.parse("99999999999999999999").error().message, HasSubstr("does not fit"));
  for (const char* bad : {"many", "1.5", "1e3", "0x10", "", " 1", "1 "}) {
    auto parsed = i64.parse(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().message, std::string("expected an integer, got '") + bad + "'");
  }
}

TEST(ConfigCodec, DoublesAreFiniteAndRoundTrip) {
  EXPECT_DOUBLE_EQ(*parse_double("0.25"), 0.25);
  EXPECT_DOUBLE_EQ(*parse_double("-1e-3"), -1e-3);
  EXPECT_DOUBLE_EQ(*parse_double("+2"), 2.0);
  for (const char* bad : {"abc", "inf", "nan", "", "1.0.0"}) {
    EXPECT_FALSE(parse_double(bad).ok()) << bad;
  }
  for (double value : {0.1, 1.0 / 3.0, 1e300, -2.5e-7}) {
    EXPECT_EQ(*parse_double(format_double(value)), value);
  }
}

TEST(ConfigCodec, DurationsNeedAUnit) {
  EXPECT_EQ(*parse_duration("250ms"), 250ms);
  EXPECT_EQ(*parse_duration("10s"), 10s);
  EXPECT_EQ(*parse_duration("1.5m"), 90s);
  EXPECT_EQ(*parse_duration("2h"), 2h);
  EXPECT_EQ(*parse_duration("100us"), 100us);
  EXPECT_EQ(*parse_duration("7ns"), 7ns);
  EXPECT_EQ(*parse_duration("0.1s"), 100ms);
  EXPECT_EQ(*parse_duration("1m30s"), 90s);
  EXPECT_EQ(*parse_duration("0s"), 0s);

  auto bare = parse_duration("10");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().message,
            "expected a duration with a unit, got '10' (a bare number is ambiguous: write '10s' "
            "or '10ms')");
  EXPECT_EQ(parse_duration("10 parsecs").error().message,
            "expected a duration such as '250ms', '10s', '1.5m' or '2h', got '10 parsecs'");
  EXPECT_EQ(parse_duration("3d").error().message,
            "unknown duration unit 'd' in '3d' (use ns, us, ms, s, m or h)");
  EXPECT_THAT(parse_duration("-5s").error().message, HasSubstr("must not be negative"));
  for (const char* bad : {"", "abc", "s", "1.2.3s", "5s10", "99999999h"}) {
    EXPECT_FALSE(parse_duration(bad).ok()) << bad;
  }
}

TEST(ConfigCodec, DurationsFormatInTheLargestExactUnit) {
  EXPECT_EQ(format_duration(2h), "2h");
  EXPECT_EQ(format_duration(90s), "90s");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(3ns), "3ns");
  for (Duration value : {Duration{1}, Duration{123456789}, Duration{3600000000001}}) {
    EXPECT_EQ(*parse_duration(format_duration(value)), value);
  }
}

TEST(ConfigCodec, CoarseDurationFieldsRejectFinerValues) {
  DurationCodec<std::chrono::milliseconds> ms;
  EXPECT_EQ(*ms.parse("2s"), 2000ms);
  auto fine = ms.parse("1500us");
  ASSERT_FALSE(fine.ok());
  EXPECT_EQ(fine.error().message, "'1500us' is finer than this field's resolution (1ms)");
}

TEST(ConfigCodec, ByteSizesAcceptBinaryAndDecimalUnits) {
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("4096B"), 4096u);
  EXPECT_EQ(*parse_byte_size("512KiB"), 512u * 1024);
  EXPECT_EQ(*parse_byte_size("16MiB"), 16u << 20);
  EXPECT_EQ(*parse_byte_size("16mib"), 16u << 20);
  EXPECT_EQ(*parse_byte_size("1GB"), 1'000'000'000u);
  EXPECT_EQ(*parse_byte_size("1.5GiB"), 1536ull << 20);
  EXPECT_EQ(*parse_byte_size("2 TiB"), 2ull << 40);

  EXPECT_EQ(parse_byte_size("16XB").error().message,
            "unknown size unit 'XB' in '16XB' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");
  EXPECT_EQ(parse_byte_size("1.5B").error().message, "'1.5B' is not a whole number of bytes");
  EXPECT_THAT(parse_byte_size("lots").error().message, HasSubstr("expected a byte size"));
  EXPECT_THAT(parse_byte_size("99999999TiB").error().message, HasSubstr("too large"));
  for (const char* bad : {"", "-1", "MiB", "1.2.3KiB"}) {
    EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
  }
  ByteSizeCodec<std::uint32_t> u32;
  EXPECT_THAT(u32.parse("8GiB").error().message, HasSubstr("does not fit in uint32"));
}

TEST(ConfigCodec, ByteSizesFormatExactly) {
  EXPECT_EQ(format_byte_size(16u << 20), "16MiB");
  EXPECT_EQ(format_byte_size(1'000'000'000), "1GB");
  EXPECT_EQ(format_byte_size(4097), "4097");
  EXPECT_EQ(format_byte_size(0), "0");
  for (std::uint64_t value : {1ull, 1024ull, 1000ull, 123456789ull, 5ull << 40, ~0ull}) {
    EXPECT_EQ(*parse_byte_size(format_byte_size(value)), value);
  }
}

TEST(ConfigCodec, EnumsParseByNameAndListChoicesOnError) {
  enum class Color { kRed, kBlue };
  EnumCodec<Color> codec{{{"red", Color::kRed}, {"blue", Color::kBlue}}};
  EXPECT_EQ(*codec.parse("blue"), Color::kBlue);
  EXPECT_EQ(codec.format(Color::kRed), "red");
  EXPECT_EQ(codec.parse("green").error().message,
            "unknown value 'green', expected one of: red, blue");
  EXPECT_EQ(codec.parse("Red").error().message, "unknown value 'Red', expected one of: red, blue");
}

}  // namespace
}  // namespace omni::config
