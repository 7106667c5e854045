// Scalar codecs: how one configuration value is read from text and written back as text.
//
// YAML scalars and command-line flag values are both plain text, so every scalar type has one
// codec used by both paths; that is what makes `--header-timeout=abc` and `header_timeout: abc`
// fail with the same message. A codec is a small value type:
//
//   Value                          the C++ type it produces
//   type_name()                    for docs ("duration"), flag_type() for --help ("DURATION")
//   expected()                     a noun phrase for messages ("a duration such as '250ms'")
//   parse(text) -> Result<Value>   the error message says what was expected and what was found
//   format(value) -> text          parse(format(v)) == v, so a dumped config loads back equal
//
// Write your own for a custom type and bind it with Schema::field_as().
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"

namespace omni::config {

// ---- Text conversions shared by the codecs (src/common/config/codec.cpp) ----

// true/false, yes/no, on/off (any case); 1/0 too, for the command line.
Result<bool> parse_bool(std::string_view text);
// Decimal integers, optional sign; no hex, no exponent, no separators.
Result<std::int64_t> parse_int64(std::string_view text);
Result<std::uint64_t> parse_uint64(std::string_view text);
// A finite decimal number ("0.5", "1e-3").
Result<double> parse_double(std::string_view text);
std::string format_double(double value);  // shortest text that parses back to the same double

// "250ms", "10s", "1.5m", "2h", "100us", "5ns", compounds like "1m30s". A unit is required:
// a bare "10" is rejected because seconds-or-milliseconds is exactly the ambiguity that
// produces 1000x timeouts in production.
Result<Duration> parse_duration(std::string_view text);
std::string format_duration(Duration value);  // the largest unit that is exact: "90s", "2h"

// "4096", "4096B", "512KiB", "16MiB", "1GiB", "1.5GiB" (binary) or "1KB", "1GB" (decimal).
// Units are case-insensitive; the result must be a whole number of bytes.
Result<std::uint64_t> parse_byte_size(std::string_view text);
std::string format_byte_size(std::uint64_t bytes);  // "16MiB", "1GB", or plain "4097"

namespace detail {
// "value 70000 does not fit in uint16 (0..65535)"
Error out_of_range_error(std::string_view text, std::string_view type, std::string_view bounds);
Error expected_error(std::string_view expected, std::string_view text);  // "expected X, got 'text'"

template <class I>
constexpr std::string_view integer_type_name() {
  constexpr int bits = std::numeric_limits<I>::digits + (std::is_signed_v<I> ? 1 : 0);
  if constexpr (std::is_signed_v<I>) {
    return bits == 8 ? "int8" : bits == 16 ? "int16" : bits == 32 ? "int32" : "int64";
  } else {
    return bits == 8 ? "uint8" : bits == 16 ? "uint16" : bits == 32 ? "uint32" : "uint64";
  }
}

// Narrows a parsed 64-bit value into I, or says why it cannot.
template <class I, class Wide>
Result<I> narrow_integer(Wide wide, std::string_view text) {
  if (std::in_range<I>(wide)) return static_cast<I>(wide);
  std::string bounds = std::to_string(std::numeric_limits<I>::min()) + ".." +
                       std::to_string(std::numeric_limits<I>::max());
  return out_of_range_error(text, integer_type_name<I>(), bounds);
}
}  // namespace detail

// ---- Codecs ----

struct BoolCodec {
  using Value = bool;
  std::string type_name() const { return "bool"; }
  std::string flag_type() const { return "BOOL"; }
  std::string expected() const { return "a boolean (true/false)"; }
  Result<bool> parse(std::string_view text) const { return parse_bool(text); }
  std::string format(bool value) const { return value ? "true" : "false"; }
};

template <std::integral I>
struct IntCodec {
  using Value = I;
  std::string type_name() const { return "integer"; }
  std::string flag_type() const { return "INT"; }
  std::string expected() const { return "an integer"; }
  Result<I> parse(std::string_view text) const {
    if constexpr (std::is_signed_v<I>) {
      auto wide = parse_int64(text);
      if (!wide) return std::move(wide).error();
      return detail::narrow_integer<I>(*wide, text);
    } else {
      auto wide = parse_uint64(text);
      if (!wide) return std::move(wide).error();
      return detail::narrow_integer<I>(*wide, text);
    }
  }
  std::string format(I value) const { return std::to_string(value); }
};

struct DoubleCodec {
  using Value = double;
  std::string type_name() const { return "number"; }
  std::string flag_type() const { return "NUMBER"; }
  std::string expected() const { return "a number"; }
  Result<double> parse(std::string_view text) const { return parse_double(text); }
  std::string format(double value) const { return format_double(value); }
};

struct StringCodec {
  using Value = std::string;
  std::string type_name() const { return "string"; }
  std::string flag_type() const { return "TEXT"; }
  std::string expected() const { return "a string"; }
  Result<std::string> parse(std::string_view text) const { return std::string(text); }
  std::string format(const std::string& value) const { return value; }
};

// Any integral std::chrono::duration; omni::Duration (nanoseconds) is the common case. A value
// finer than the field's unit ("1500us" for a milliseconds field) is an error, not a rounding.
template <class D>
struct DurationCodec {
  using Value = D;
  std::string type_name() const { return "duration"; }
  std::string flag_type() const { return "DURATION"; }
  std::string expected() const { return "a duration such as '250ms' or '10s'"; }
  Result<D> parse(std::string_view text) const {
    auto ns = parse_duration(text);
    if (!ns) return std::move(ns).error();
    auto value = std::chrono::duration_cast<D>(*ns);
    if (std::chrono::duration_cast<Duration>(value) != *ns) {
      return make_error(ErrorCode::kInvalidArgument,
                        "'" + std::string(text) + "' is finer than this field's resolution (" +
                            format_duration(std::chrono::duration_cast<Duration>(D{1})) + ")");
    }
    return value;
  }
  std::string format(D value) const {
    return format_duration(std::chrono::duration_cast<Duration>(value));
  }
};

// Byte sizes held in an unsigned integer member; bind with Schema::bytes().
template <std::unsigned_integral I>
struct ByteSizeCodec {
  using Value = I;
  std::string type_name() const { return "byte size"; }
  std::string flag_type() const { return "SIZE"; }
  std::string expected() const { return "a byte size such as '4096', '512KiB' or '16MiB'"; }
  Result<I> parse(std::string_view text) const {
    auto wide = parse_byte_size(text);
    if (!wide) return std::move(wide).error();
    return detail::narrow_integer<I>(*wide, text);
  }
  std::string format(I value) const { return format_byte_size(value); }
};

// Enums by name. The names come from FieldBuilder::choices(); parsing is exact (names are
// lower_snake_case by convention) and an unknown name lists the valid ones.
template <class E>
requires std::is_enum_v<E>
struct EnumCodec {
  using Value = E;
  std::vector<std::pair<std::string, E>> names;

  std::string type_name() const { return "enum: " + joined(" | "); }
  std::string flag_type() const { return "{" + joined(",") + "}"; }
  std::string expected() const { return "one of " + joined(", "); }
  Result<E> parse(std::string_view text) const {
    for (const auto& [name, value] : names) {
      if (name == text) return value;
    }
    if (names.empty()) {
      return make_error(ErrorCode::kInternal, "enum field declared without choices()");
    }
    return make_error(ErrorCode::kInvalidArgument, "unknown value '" + std::string(text) +
                                                       "', expected one of: " + joined(", "));
  }
  std::string format(E value) const {
    for (const auto& [name, candidate] : names) {
      if (candidate == value) return name;
    }
    return "<invalid " + std::to_string(static_cast<std::underlying_type_t<E>>(value)) + ">";
  }

 private:
  std::string joined(std::string_view separator) const {
    std::string out;
    for (const auto& entry : names) {
      if (!out.empty()) out += separator;
      out += entry.first;
    }
    return out;
  }
};

// The codec field() picks for a member's element type.
template <class V>
struct DefaultCodecFor {
  static_assert(sizeof(V) == 0,
                "no default codec for this type: use section()/list() for structs, "
                "bytes() for sizes, or field_as() with your own codec");
};
template <>
struct DefaultCodecFor<bool> {
  using type = BoolCodec;
};
template <std::integral I>
requires(!std::same_as<I, bool>) struct DefaultCodecFor<I> {
  using type = IntCodec<I>;
};
template <>
struct DefaultCodecFor<double> {
  using type = DoubleCodec;
};
template <>
struct DefaultCodecFor<std::string> {
  using type = StringCodec;
};
template <class Rep, class Period>
requires std::integral<Rep>
struct DefaultCodecFor<std::chrono::duration<Rep, Period>> {
  using type = DurationCodec<std::chrono::duration<Rep, Period>>;
};
template <class E>
requires std::is_enum_v<E>
struct DefaultCodecFor<E> {
  using type = EnumCodec<E>;
};

template <class V>
using DefaultCodec = typename DefaultCodecFor<V>::type;

}  // namespace omni::config
