#include "byte_level.hpp"

#include "utf8.hpp"

namespace omni::tokenizer::byte_level {
namespace {

// Printable Latin-1 bytes stand for themselves; the others are numbered from U+0100 upwards in
// byte order (the table of GPT-2's bytes_to_unicode()).
struct Tables {
  std::array<char32_t, 256> to_char{};
  Tables() {
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t char_for_byte(unsigned char byte) noexcept { return tables().to_char[byte]; }

std::optional<unsigned char> byte_for_char(char32_t cp) noexcept {
  if (cp < 256) {
    const auto b = static_cast<unsigned char>(cp);
    if (tables().to_char[b] == cp) return b;
    return std::nullopt;
  }
  if (cp < 256 + 68) {  // 68 = the number of non-printable bytes remapped above U+00FF
    for (unsigned b = 0; b < 256; ++b) {
      if (tables().to_char[b] == cp) return static_cast<unsigned char>(b);
    }
  }
  return std::nullopt;
}

std::optional<std::string> to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  std::size_t i = 0;
  while (i < token.size()) {
    char32_t cp = 0;
    const std::size_t n = utf8::valid_sequence_length(token, i, cp);
    if (n == 0) return std::nullopt;
    const auto b = byte_for_char(cp);
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
    i += n;
  }
  return out;
}

std::string from_bytes(std::string_view bytes) {
  std::string out;
  for (char c : bytes) utf8::append(out, char_for_byte(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace omni::tokenizer::byte_level
