#include "text.hpp"

#include <algorithm>
#include <charconv>

#include <unicode/urename.h>
#include <unicode/ustring.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace omni::chat::jinja {
namespace {

// Decodes one UTF-8 code point at s[pos]; returns its length (1 for an invalid byte, cp = byte).
std::size_t decode(std::string_view s, std::size_t pos, std::uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  std::size_t len = b0 < 0x80           ? 1
                    : (b0 >> 5) == 0x6  ? 2
                    : (b0 >> 4) == 0xE  ? 3
                    : (b0 >> 3) == 0x1E ? 4
                                        : 0;
  if (len == 0 || pos + len > s.size()) {
    cp = b0;
    return 1;
  }
  cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1Fu) : len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u);
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b >> 6) != 0x2) {
      cp = b0;
      return 1;
    }
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return len;
}

bool is_js_space_cp(std::uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_ascii_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

void append_hex4(std::string& out, std::uint32_t unit) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xFu];
}

}  // namespace

std::size_t js_space_at(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return 0;
  std::uint32_t cp = 0;
  const std::size_t len = decode(s, pos, cp);
  return is_js_space_cp(cp) ? len : 0;
}

std::size_t js_space_ending_at(std::string_view s, std::size_t end) {
  for (std::size_t len = 1; len <= 3 && len <= end; ++len) {
    if (js_space_at(s, end - len) == len) return len;
  }
  return 0;
}

std::string_view js_trim_start(std::string_view s) {
  std::size_t pos = 0;
  while (std::size_t n = js_space_at(s, pos)) pos += n;
  return s.substr(pos);
}

std::string_view js_trim_end(std::string_view s) {
  std::size_t end = s.size();
  while (std::size_t n = js_space_ending_at(s, end)) end -= n;
  return s.substr(0, end);
}

std::vector<std::string_view> code_points(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (std::size_t pos = 0; pos < s.size();) {
    std::uint32_t cp = 0;
    const std::size_t len = decode(s, pos, cp);
    out.push_back(s.substr(pos, len));
    pos += len;
  }
  return out;
}

std::size_t utf16_length(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t pos = 0; pos < s.size();) {
    std::uint32_t cp = 0;
    pos += decode(s, pos, cp);
    n += cp >= 0x10000 ? 2 : 1;
  }
  return n;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// Full Unicode case mapping in the root locale (what JS toUpperCase/toLowerCase do), through
// UTF-16 with ICU; ASCII-only text takes the fast path.
std::string icu_case(std::string_view s, bool to_upper) {
  const bool ascii =
      std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    std::string out(s);
    for (char& c : out) c = to_upper ? upper(c) : lower(c);
    return out;
  }
  UErrorCode status = U_ZERO_ERROR;
  std::u16string in(s.size() + 1, u'\0');
  std::int32_t in_len = 0;
  u_strFromUTF8WithSub(in.data(), static_cast<std::int32_t>(in.size()), &in_len, s.data(),
                       static_cast<std::int32_t>(s.size()), 0xFFFD, nullptr, &status);
  if (U_FAILURE(status)) return std::string(s);
  std::u16string mapped(static_cast<std::size_t>(in_len) * 3 + 8, u'\0');
  status = U_ZERO_ERROR;
  const std::int32_t mapped_len =
      to_upper ? u_strToUpper(mapped.data(), static_cast<std::int32_t>(mapped.size()), in.data(),
                              in_len, "", &status)
               : u_strToLower(mapped.data(), static_cast<std::int32_t>(mapped.size()), in.data(),
                              in_len, "", &status);
  if (U_FAILURE(status)) return std::string(s);
  std::string out(static_cast<std::size_t>(mapped_len) * 3 + 4, '\0');
  std::int32_t out_len = 0;
  status = U_ZERO_ERROR;
  u_strToUTF8WithSub(out.data(), static_cast<std::int32_t>(out.size()), &out_len, mapped.data(),
                     mapped_len, 0xFFFD, nullptr, &status);
  if (U_FAILURE(status)) return std::string(s);
  out.resize(static_cast<std::size_t>(out_len));
  return out;
}

}  // namespace

std::string unicode_upper(std::string_view s) { return icu_case(s, true); }

std::string unicode_lower(std::string_view s) { return icu_case(s, false); }

std::string title_case(std::string_view s) {
  // JS: value.replace(/\b\w/g, upper): a word character not preceded by a word character.
  std::string out(s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (is_ascii_word(out[i]) && (i == 0 || !is_ascii_word(out[i - 1]))) out[i] = upper(out[i]);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  if (s.empty()) return std::string();
  std::uint32_t cp = 0;
  const std::size_t len = decode(s, 0, cp);
  if (cp >= 0x10000) return std::string(s);  // JS upper-cases half a surrogate pair: a no-op
  return icu_case(s.substr(0, len), true) + std::string(s.substr(len));
}

std::string js_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return "0";
  // Shortest round-trip digits and the decimal exponent, then JS's layout rules
  // (ECMA-262 Number::toString): plain notation for 1e-7 < |d| < 1e21, exponent otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const std::size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e_pos + 1));
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // the decimal point sits after n digits
  std::string out = sign;
  if (k <= n && n <= 21) {
    out += digits + std::string(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<std::size_t>(n)) + "." +
           digits.substr(static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0." + std::string(static_cast<std::size_t>(-n), '0') + digits;
  } else {
    out += digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += (n - 1 >= 0) ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

void json_quote(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (std::size_t pos = 0; pos < s.size();) {
    const char c = s[pos];
    switch (c) {
      case '"':
        out += "\\\"";
        ++pos;
        continue;
      case '\\':
        out += "\\\\";
        ++pos;
        continue;
      case '\b':
        out += "\\b";
        ++pos;
        continue;
      case '\f':
        out += "\\f";
        ++pos;
        continue;
      case '\n':
        out += "\\n";
        ++pos;
        continue;
      case '\r':
        out += "\\r";
        ++pos;
        continue;
      case '\t':
        out += "\\t";
        ++pos;
        continue;
      default: break;
    }
    const auto uc = static_cast<unsigned char>(c);
    if (uc < 0x20) {
      append_hex4(out, uc);
      ++pos;
      continue;
    }
    std::uint32_t cp = 0;
    const std::size_t len = decode(s, pos, cp);
    if (ensure_ascii && cp >= 0x7F) {
      if (cp >= 0x10000) {
        append_hex4(out, 0xD800 + ((cp - 0x10000) >> 10));
        append_hex4(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
      } else {
        append_hex4(out, cp);
      }
    } else {
      out.append(s.substr(pos, len));
    }
    pos += len;
  }
  out += '"';
}

}  // namespace omni::chat::jinja
