#include "omni/common/json_text.hpp"

#include <array>
#include <cstdint>

namespace omni::json {
namespace {

bool is_continuation(unsigned char byte, unsigned char low = 0x80, unsigned char high = 0xBF) {
  return byte >= low && byte <= high;
}

// Bytes that can be copied as they are: printable ASCII other than '"' and '\\'.
bool is_plain_ascii(unsigned char byte) {
  return byte >= 0x20 && byte < 0x80 && byte != '"' && byte != '\\';
}

void append_escaped_ascii(std::string& out, unsigned char byte) {
  switch (byte) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    default: break;
  }
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\u00";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

void append_digits(std::string& out, std::int64_t value, int width) {
  std::array<char, 20> digits{};
  if (value < 0) value = 0;  // only years before 1 AD could be negative
  for (int i = width - 1; i >= 0; --i) {
    digits[static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(digits.data(), static_cast<std::size_t>(width));
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) noexcept {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const std::size_t left = text.size() - pos;
  const unsigned char lead = at(0);
  if (lead < 0x80) return 1;
  // Per RFC 3629: no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no surrogates
  // (ED A0..BF), nothing above U+10FFFF (F4 90.., F5..FF).
  if (lead >= 0xC2 && lead <= 0xDF) return left >= 2 && is_continuation(at(1)) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned char low = lead == 0xE0 ? 0xA0 : 0x80;
    const unsigned char high = lead == 0xED ? 0x9F : 0xBF;
    return left >= 3 && is_continuation(at(1), low, high) && is_continuation(at(2)) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned char low = lead == 0xF0 ? 0x90 : 0x80;
    const unsigned char high = lead == 0xF4 ? 0x8F : 0xBF;
    return left >= 4 && is_continuation(at(1), low, high) && is_continuation(at(2)) &&
                   is_continuation(at(3))
               ? 4
               : 0;
  }
  return 0;
}

void append_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t run = pos;
    while (run < text.size() && is_plain_ascii(static_cast<unsigned char>(text[run]))) ++run;
    out.append(text.data() + pos, run - pos);
    pos = run;
    if (pos == text.size()) break;
    const auto byte = static_cast<unsigned char>(text[pos]);
    if (byte < 0x80) {
      append_escaped_ascii(out, byte);
      ++pos;
    } else if (const std::size_t length = utf8_sequence_length(text, pos); length != 0) {
      out.append(text.data() + pos, length);
      pos += length;
    } else {
      out += "\\ufffd";
      ++pos;
    }
  }
  out += '"';
}

void append_timestamp(std::string& out, std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const auto micros = floor<microseconds>(time);
  const auto day = floor<days>(micros);
  const year_month_day date{day};
  const hh_mm_ss clock{micros - day};
  append_digits(out, static_cast<int>(date.year()), 4);
  out += '-';
  append_digits(out, static_cast<unsigned>(date.month()), 2);
  out += '-';
  append_digits(out, static_cast<unsigned>(date.day()), 2);
  out += 'T';
  append_digits(out, clock.hours().count(), 2);
  out += ':';
  append_digits(out, clock.minutes().count(), 2);
  out += ':';
  append_digits(out, clock.seconds().count(), 2);
  out += '.';
  append_digits(out, clock.subseconds().count(), 6);
  out += 'Z';
}

}  // namespace omni::json
