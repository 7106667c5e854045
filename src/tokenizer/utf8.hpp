// UTF-8 helpers shared by the tokenizer: decoding one character, validation, and the lossy
// repair that Rust's String::from_utf8_lossy performs (each maximal invalid subpart becomes one
// U+FFFD), so our decode output matches Hugging Face byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace omni::tokenizer::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid sequence starting at `text[pos]`, or 0 when the bytes there are not a
// complete, valid UTF-8 character. `cp` receives the code point when valid.
std::size_t valid_sequence_length(std::string_view text, std::size_t pos, char32_t& cp) noexcept;

// Length of the maximal invalid subpart at `pos` (>= 1); call only where the sequence is invalid.
std::size_t invalid_subpart_length(std::string_view text, std::size_t pos) noexcept;

bool is_valid(std::string_view text) noexcept;

// `text` with every maximal invalid subpart replaced by U+FFFD.
std::string to_valid_lossy(std::string_view text);

// The length of the longest prefix of `bytes` after which no character is cut: trailing bytes
// that are the valid beginning of a not-yet-complete character are excluded. Invalid bytes are
// not held back (they will never become valid).
std::size_t complete_prefix_length(std::string_view bytes) noexcept;

// Appends the UTF-8 encoding of `cp`.
void append(std::string& out, char32_t cp);

// Decodes the character at `pos` of valid UTF-8 text and returns its length.
inline std::size_t decode_valid(std::string_view text, std::size_t pos, char32_t& cp) noexcept {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  const auto cont = [&](std::size_t i) {
    return static_cast<char32_t>(static_cast<unsigned char>(text[pos + i]) & 0x3Fu);
  };
  if (b0 < 0xE0) {
    cp = (static_cast<char32_t>(b0 & 0x1Fu) << 6) | cont(1);
    return 2;
  }
  if (b0 < 0xF0) {
    cp = (static_cast<char32_t>(b0 & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
    return 3;
  }
  cp = (static_cast<char32_t>(b0 & 0x07u) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
  return 4;
}

}  // namespace omni::tokenizer::utf8
