// GPT-2's byte-level alphabet: every byte is shown as a printable Unicode character so that BPE
// vocabularies can be stored as JSON strings ("Ġ" is the space byte 0x20). We run BPE directly on
// raw bytes and translate the vocabulary once at load time instead of mapping every input byte.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace omni::tokenizer::byte_level {

// The character that stands for `byte`.
char32_t char_for_byte(unsigned char byte) noexcept;

// The byte a character stands for, if it is one of the 256 alphabet characters.
std::optional<unsigned char> byte_for_char(char32_t cp) noexcept;

// Raw bytes of a byte-level token string; nullopt if a character is outside the alphabet.
std::optional<std::string> to_bytes(std::string_view token);

// The byte-level spelling of raw bytes.
std::string from_bytes(std::string_view bytes);

}  // namespace omni::tokenizer::byte_level
