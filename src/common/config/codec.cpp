// Text <-> value conversions behind the scalar codecs (include/omni/config/codec.hpp).
#include "omni/config/codec.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

namespace omni::config {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// The unsigned decimal number at the start of `text` ("1.5" of "1.5m"); from_chars, unlike
// strtod, never reads locale-dependent or hex forms.
std::string_view leading_number(std::string_view text) {
  std::size_t end = 0;
  while (end < text.size() && (is_digit(text[end]) || text[end] == '.')) ++end;
  return text.substr(0, end);
}

bool to_double(std::string_view text, double& out) {
  if (text.empty() || text == ".") return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};

constexpr std::array<Unit, 6> kDurationUnits{{{"h", 3'600'000'000'000},
                                              {"m", 60'000'000'000},
                                              {"s", 1'000'000'000},
                                              {"ms", 1'000'000},
                                              {"us", 1'000},
                                              {"ns", 1}}};

// Binary first, so 1024 prints as "1KiB"; exact decimal multiples print as "1KB".
constexpr std::array<Unit, 8> kSizeUnits{{{"TiB", 1ULL << 40},
                                          {"GiB", 1ULL << 30},
                                          {"MiB", 1ULL << 20},
                                          {"KiB", 1ULL << 10},
                                          {"TB", 1'000'000'000'000},
                                          {"GB", 1'000'000'000},
                                          {"MB", 1'000'000},
                                          {"KB", 1'000}}};

constexpr std::string_view kDurationExamples = "such as '250ms', '10s', '1.5m' or '2h'";

Error duration_error(std::string_view text) {
  return invalid("expected a duration " + std::string(kDurationExamples) + ", got '" +
                 std::string(text) + "'");
}

}  // namespace

namespace detail {
Error out_of_range_error(std::string_view text, std::string_view type, std::string_view bounds) {
  return invalid("value " + std::string(text) + " does not fit in " + std::string(type) + " (" +
                 std::string(bounds) + ")");
}
Error expected_error(std::string_view expected, std::string_view text) {
  return invalid("expected " + std::string(expected) + ", got '" + std::string(text) + "'");
}
}  // namespace detail

Result<bool> parse_bool(std::string_view text) {
  const std::string word = lower(text);
  if (word == "true" || word == "yes" || word == "on" || word == "1") return true;
  if (word == "false" || word == "no" || word == "off" || word == "0") return false;
  return detail::expected_error("a boolean (true/false)", text);
}

Result<std::int64_t> parse_int64(std::string_view text) {
  std::string_view digits = text.starts_with('+') ? text.substr(1) : text;
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ptr != digits.data() + digits.size() || digits.empty()) {
    return detail::expected_error("an integer", text);
  }
  if (ec == std::errc::result_out_of_range) {
    return detail::out_of_range_error(text, "int64", "-9223372036854775808..9223372036854775807");
  }
  if (ec != std::errc()) return detail::expected_error("an integer", text);
  return value;
}

Result<std::uint64_t> parse_uint64(std::string_view text) {
  std::string_view digits = text.starts_with('+') ? text.substr(1) : text;
  if (digits.starts_with('-')) {
    auto negative = parse_int64(text);
    return negative ? detail::expected_error("a non-negative integer", text)
                    : detail::expected_error("an integer", text);
  }
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ptr != digits.data() + digits.size() || digits.empty()) {
    return detail::expected_error("an integer", text);
  }
  if (ec == std::errc::result_out_of_range) {
    return detail::out_of_range_error(text, "uint64", "0..18446744073709551615");
  }
  if (ec != std::errc()) return detail::expected_error("an integer", text);
  return value;
}

Result<double> parse_double(std::string_view text) {
  std::string_view body = text.starts_with('+') ? text.substr(1) : text;
  double value = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (body.empty() || ec != std::errc() || ptr != body.data() + body.size() ||
      !std::isfinite(value)) {
    return detail::expected_error("a finite number", text);
  }
  return value;
}

std::string format_double(double value) {
  std::array<char, 64> buffer{};
  auto [ptr, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  if (ec != std::errc()) return std::to_string(value);
  return std::string(buffer.data(), ptr);
}

Result<Duration> parse_duration(std::string_view text) {
  if (text.starts_with('-')) {
    return invalid("a duration must not be negative, got '" + std::string(text) + "'");
  }
  if (text.empty()) return duration_error(text);
  double total_ns = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::string_view number = leading_number(rest);
    std::string_view after = rest.substr(number.size());
    std::size_t unit_length = 0;
    while (unit_length < after.size() && is_alpha(after[unit_length])) ++unit_length;
    std::string_view unit = after.substr(0, unit_length);
    double value = 0;
    if (!to_double(number, value)) return duration_error(text);
    if (unit.empty()) {
      if (number.size() == text.size()) {
        return invalid("expected a duration with a unit, got '" + std::string(text) +
                       "' (a bare number is ambiguous: write '" + std::string(text) + "s' or '" +
                       std::string(text) + "ms')");
      }
      return duration_error(text);
    }
    const Unit* match = nullptr;
    for (const auto& candidate : kDurationUnits) {
      if (candidate.name == unit) match = &candidate;
    }
    if (match == nullptr) {
      return invalid("unknown duration unit '" + std::string(unit) + "' in '" + std::string(text) +
                     "' (use ns, us, ms, s, m or h)");
    }
    total_ns += value * static_cast<double>(match->factor);
    rest = after.substr(unit_length);
  }
  if (total_ns >= 9.2e18) return invalid("duration '" + std::string(text) + "' is too long");
  return Duration{static_cast<std::int64_t>(std::llround(total_ns))};
}

std::string format_duration(Duration value) {
  std::int64_t ns = value.count();
  if (ns == 0) return "0s";
  if (ns < 0) return "-" + format_duration(Duration{-ns});
  const auto magnitude = static_cast<std::uint64_t>(ns);
  for (const auto& unit : kDurationUnits) {
    if (magnitude % unit.factor == 0) {
      return std::to_string(magnitude / unit.factor) + std::string(unit.name);
    }
  }
  return std::to_string(ns) + "ns";  // unreachable: ns divides everything
}

Result<std::uint64_t> parse_byte_size(std::string_view text) {
  const Error shape_error =
      detail::expected_error("a byte size such as '4096', '512KiB', '16MiB' or '1GB'", text);
  std::string_view number = leading_number(text);
  std::string_view unit = text.substr(number.size());
  while (unit.starts_with(' ')) unit.remove_prefix(1);
  std::uint64_t factor = 1;
  if (!unit.empty() && lower(unit) != "b") {
    const Unit* match = nullptr;
    for (const auto& candidate : kSizeUnits) {
      if (lower(candidate.name) == lower(unit)) match = &candidate;
    }
    if (match == nullptr) {
      if (number.empty()) return shape_error;
      return invalid("unknown size unit '" + std::string(unit) + "' in '" + std::string(text) +
                     "' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");
    }
    factor = match->factor;
  }
  double value = 0;
  if (!to_double(number, value)) return shape_error;
  const Error too_large = invalid("byte size '" + std::string(text) + "' is too large");
  if (number.find('.') == std::string_view::npos) {
    // Whole numbers stay exact, up to the last byte of a uint64.
    std::uint64_t whole = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), whole);
    if (ec != std::errc() || whole > std::numeric_limits<std::uint64_t>::max() / factor) {
      return too_large;
    }
    return whole * factor;
  }
  const double bytes = value * static_cast<double>(factor);
  if (bytes >= 1.8e19) return too_large;
  if (std::floor(bytes) != bytes) {
    return invalid("'" + std::string(text) + "' is not a whole number of bytes");
  }
  return static_cast<std::uint64_t>(bytes);
}

std::string format_byte_size(std::uint64_t bytes) {
  if (bytes == 0) return "0";
  for (const auto& unit : kSizeUnits) {
    if (bytes % unit.factor == 0)
      return std::to_string(bytes / unit.factor) + std::string(unit.name);
  }
  return std::to_string(bytes);
}

}  // namespace omni::config
