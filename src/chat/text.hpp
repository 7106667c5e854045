// String helpers with the semantics of JavaScript strings (the reference renderer,
// @huggingface/jinja, runs on them): JS whitespace for trim/strip and `-%}`, JS number
// formatting, JSON.stringify quoting, UTF-16 lengths. Our strings are UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omni::chat::jinja {

// Length in bytes of the JS-whitespace code point at s[pos] (0 when it is not whitespace).
// JS \s: ASCII \t \n \v \f \r and space, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029,
// U+202F, U+205F, U+3000, U+FEFF.
std::size_t js_space_at(std::string_view s, std::size_t pos);
std::size_t js_space_ending_at(std::string_view s, std::size_t end);  // the one ending at `end`

std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);
inline std::string_view js_trim(std::string_view s) { return js_trim_end(js_trim_start(s)); }

// Splits into UTF-8 code points (an invalid byte is a code point of its own).
std::vector<std::string_view> code_points(std::string_view s);
// Number of UTF-16 code units (what JS .length reports).
std::size_t utf16_length(std::string_view s);
void append_utf8(std::string& out, std::uint32_t cp);

// JS toUpperCase/toLowerCase: full Unicode case mapping, root locale ("ß" -> "SS").
std::string unicode_upper(std::string_view s);
std::string unicode_lower(std::string_view s);
// JS value.replace(/\b\w/g, upper): ASCII word starts only, as the reference's `title`.
std::string title_case(std::string_view s);
// JS charAt(0).toUpperCase() + slice(1).
std::string capitalize(std::string_view s);

// Number.prototype.toString for a finite double ("0.1", "1e+21", "-5"); NaN/Infinity spelled
// as JS does.
std::string js_number(double d);
// JSON.stringify of a string; ensure_ascii escapes every code unit >= 0x7f as \uXXXX.
void json_quote(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace omni::chat::jinja
