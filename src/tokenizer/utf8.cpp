#include "utf8.hpp"

namespace omni::tokenizer::utf8 {
namespace {

unsigned char byte_at(std::string_view text, std::size_t i) {
  return static_cast<unsigned char>(text[i]);
}

// The number of bytes a lead byte announces, and the range its first continuation byte must be in
// (Unicode Table 3-7, "well-formed UTF-8 byte sequences"). Returns 0 for a byte that cannot lead.
std::size_t lead_info(unsigned char b0, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) return 2;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
    return 4;
  }
  return 0;
}

// How many bytes from `pos` form a valid (possibly incomplete) prefix of one character.
std::size_t valid_prefix(std::string_view text, std::size_t pos, std::size_t& needed) {
  const unsigned char b0 = byte_at(text, pos);
  if (b0 < 0x80) {
    needed = 1;
    return 1;
  }
  unsigned char lo = 0;
  unsigned char hi = 0;
  needed = lead_info(b0, lo, hi);
  if (needed == 0) return 0;
  std::size_t n = 1;
  while (n < needed && pos + n < text.size()) {
    const unsigned char b = byte_at(text, pos + n);
    const bool ok = n == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++n;
  }
  return n;
}

}  // namespace

std::size_t valid_sequence_length(std::string_view text, std::size_t pos, char32_t& cp) noexcept {
  std::size_t needed = 0;
  const std::size_t n = valid_prefix(text, pos, needed);
  if (n == 0 || n != needed) return 0;
  decode_valid(text, pos, cp);
  return n;
}

std::size_t invalid_subpart_length(std::string_view text, std::size_t pos) noexcept {
  std::size_t needed = 0;
  const std::size_t n = valid_prefix(text, pos, needed);
  return n == 0 ? 1 : n;
}

bool is_valid(std::string_view text) noexcept {
  std::size_t i = 0;
  char32_t cp = 0;
  while (i < text.size()) {
    if (byte_at(text, i) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = valid_sequence_length(text, i, cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_lossy(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  std::size_t i = 0;
  char32_t cp = 0;
  while (i < text.size()) {
    const std::size_t n = valid_sequence_length(text, i, cp);
    if (n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      i += invalid_subpart_length(text, i);
    }
  }
  return out;
}

std::size_t complete_prefix_length(std::string_view bytes) noexcept {
  // A character is at most 4 bytes: only the last 3 bytes can start an unfinished one.
  const std::size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (std::size_t start = from; start < bytes.size(); ++start) {
    std::size_t needed = 0;
    const std::size_t n = valid_prefix(bytes, start, needed);
    if (n > 1 || (n == 1 && needed > 1)) {
      if (start + n == bytes.size() && n < needed) return start;
    }
  }
  return bytes.size();
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace omni::tokenizer::utf8
